/*
 * Live events from agentsite: django-eventstream's SSE format, served by streams/sse.py.
 *
 *   const stream = agentsiteEvents.open("/api/runs/<id>/events/", {
 *     onEvent(data, meta) { ... },   // data: the parsed JSON (an AG-UI event, or a queue change)
 *     onError(info) { ... },         // the stream is closed for good (401/403/404, access revoked)
 *     onGap(info) { ... },           // events the store no longer has (expired after 24 h),
 *                                    // or queue changes lost in an outage (the server's
 *                                    // stream-reset): rebuild from the REST / AG-UI
 *                                    // connect API, or re-read the page's part
 *     onState(state) { ... },        // "open", "reconnecting" (waiting to reopen) or "closed"
 *   });
 *   stream.close();
 *
 * Every event id is "<channel>:<n>" (n grows by one per channel; several channels are
 * joined with ","), or "<channel>:<n>.<k>" for an event the server made after stored
 * event n (streams/sse.py: a resume from it starts after n). This wrapper:
 *   - drops any event whose id it has already seen (a replay can repeat events), and
 *   - when a number is skipped (n > last + 1) reopens the stream after the last event it
 *     has, so the server replays the missing ones: the handler sees each event once, in order.
 *   - starts from the id a stream "from now on" gives its `stream-open` (the channel's
 *     last id when it opened), so a reopen before any event misses nothing either.
 *   - reopens a stream the browser gave up on. EventSource reconnects by itself only after
 *     a dropped connection; any non-200 answer (a proxy's 502/503 during a burst or a
 *     deploy, Pushpin's 500 just after a restart, but also 401/404) leaves it CLOSED for
 *     good. Then one plain request to the same URL (aborted once its status is known)
 *     tells them apart: 400/401/403/404/410 end the stream (onError), anything else
 *     reopens it after a jittered backoff (1 s doubling to 30 s; back to 1 s once a
 *     stream delivered an event or stayed open 30 s), from the last event seen (the
 *     `lastEventId` query parameter: a new EventSource cannot set Last-Event-ID).
 * Options: `from` — an id to resume after (e.g. kept across a page reload with stream.lastId()).
 *
 *   const live = agentsiteEvents.notice(document.getElementById("stream-notice"));
 *   agentsiteEvents.open(url, { onEvent, onState: live.track("run") });
 * shows the page's server-rendered "Reconnecting…" notice while a stream waits to reopen.
 */
(function (global) {
  "use strict";

  const FIRST_DELAY = 1000;
  const MAX_DELAY = 30000;
  const HEALTHY_AFTER = 30000; // open this long: the next failure starts the backoff over
  const FINAL = [400, 401, 403, 404, 410]; // retrying cannot help

  function parseId(id) {
    const out = {};
    if (!id) return out;
    for (const part of id.split(",")) {
      const at = part.lastIndexOf(":");
      if (at > 0) out[decodeURIComponent(part.slice(0, at))] = Number(part.slice(at + 1));
    }
    return out;
  }

  function makeId(seen) {
    return Object.keys(seen).map((c) => encodeURIComponent(c) + ":" + seen[c]).join(",");
  }

  // Full-ish jitter: half the delay fixed, half random, so reconnects after a proxy
  // restart spread out instead of arriving together.
  function backoff(attempt, random) {
    const delay = Math.min(MAX_DELAY, FIRST_DELAY * 2 ** attempt);
    return delay / 2 + random() * (delay / 2);
  }

  function open(url, handlers, options) {
    handlers = handlers || {};
    options = options || {};
    const Source = options.EventSource || global.EventSource;
    const probeFetch = options.fetch || (global.fetch && global.fetch.bind(global));
    const random = options.random || Math.random;
    const now = options.now || Date.now;
    const later = options.setTimeout || global.setTimeout.bind(global);
    const cancel = options.clearTimeout || global.clearTimeout.bind(global);
    const credentials = options.withCredentials ? "include" : "same-origin";
    const seen = parseId(options.from || "");
    let source = null;
    let closed = false;
    let retriedFrom = null; // a gap the store cannot fill (expired events) is retried once
    let attempt = 0; // failures in a row
    let openedAt = null;
    let timer = null;
    let probe = null;
    let state = null;

    function setState(next) {
      if (next === state) return;
      state = next;
      if (handlers.onState) handlers.onState(next);
    }

    function target() {
      const from = makeId(seen);
      return from ? url + (url.includes("?") ? "&" : "?") + "lastEventId=" +
        encodeURIComponent(from) : url;
    }

    function connect() {
      timer = null;
      openedAt = null;
      const current = new Source(target(), { withCredentials: !!options.withCredentials });
      source = current;
      current.addEventListener("open", () => {
        openedAt = now();
        setState("open");
      });
      current.addEventListener("message", onMessage);
      // A stream "from now on" (/api/events/) names where now is: a reopen before its
      // first event resumes from there and gets what changed while it was away.
      current.addEventListener("stream-open", (e) => {
        const ids = parseId(e.lastEventId);
        for (const c of Object.keys(ids)) if (seen[c] === undefined) seen[c] = ids[c];
      });
      current.addEventListener("stream-error", (e) => fail(JSON.parse(e.data)));
      current.addEventListener("stream-reset", (e) => {
        if (handlers.onGap) handlers.onGap(JSON.parse(e.data)); // (a store that knows it lost some)
      });
      current.onerror = () => {
        if (current !== source || closed) return;
        if (openedAt !== null && now() - openedAt >= HEALTHY_AFTER) attempt = 0;
        openedAt = null;
        // CONNECTING: the connection dropped and the browser retries by itself (with
        // Last-Event-ID). CLOSED: it got a non-200 answer and will not retry.
        if (current.readyState === 2) giveUp(); else setState("reconnecting");
      };
    }

    // The browser gave up: find out why (one request, aborted at its headers), then
    // either stop for good or reopen after the backoff.
    function giveUp() {
      source.close();
      setState("reconnecting");
      if (!probeFetch) { schedule(); return; }
      const abort = typeof AbortController !== "undefined" ? new AbortController() : null;
      const mine = (probe = { abort });
      probeFetch(target(), {
        credentials, cache: "no-store", headers: { Accept: "text/event-stream" },
        signal: abort ? abort.signal : undefined,
      }).then((response) => {
        if (abort) abort.abort(); // a 200 would be a live stream: we only wanted the status
        if (mine !== probe || closed) return;
        probe = null;
        if (FINAL.includes(response.status)) fail({ condition: "closed", status: response.status });
        else schedule();
      }, () => {
        if (mine !== probe || closed) return;
        probe = null;
        schedule(); // no answer at all (proxy down): try again later
      });
    }

    function schedule() {
      if (closed || timer !== null) return;
      const delay = backoff(attempt, random);
      attempt += 1;
      timer = later(connect, delay);
    }

    function onMessage(e) {
      attempt = 0; // this stream works: a later failure starts the backoff over
      const ids = parseId(e.lastEventId);
      const channels = Object.keys(ids);
      const fresh = channels.filter((c) => seen[c] === undefined || ids[c] > seen[c]);
      if (channels.length && !fresh.length) return; // seen already: drop it
      // "<n>.<k>" reads as a number between n and n + 1: no gap before n + 1.
      const gap = fresh.some((c) => seen[c] !== undefined && ids[c] > seen[c] + 1);
      if (gap && retriedFrom !== makeId(seen)) {
        retriedFrom = makeId(seen);
        source.close(); // ask again from the last event we have
        if (!closed) connect();
        return;
      }
      if (gap && handlers.onGap) handlers.onGap({ after: makeId(seen), got: e.lastEventId });
      for (const c of fresh) seen[c] = ids[c];
      if (handlers.onEvent) handlers.onEvent(JSON.parse(e.data), { id: e.lastEventId });
    }

    function stop() {
      closed = true;
      if (timer !== null) { cancel(timer); timer = null; }
      if (probe && probe.abort) probe.abort.abort();
      probe = null;
      source.close();
    }

    function fail(info) {
      if (closed) return;
      stop();
      setState("closed");
      if (handlers.onError) handlers.onError(info);
    }

    connect();
    return {
      close() { stop(); setState("closed"); },
      lastId() { return makeId(seen); },
    };
  }

  // A page's live-connection notice, server-rendered: a `role=status` element (always
  // there, empty to the eye) holding one hidden child per state it tells about ([data-state=reconnecting], and
  // [data-state=closed] for a stream ended for good). `track(name)` is a stream's onState.
  // "Reconnecting" shows once a stream has waited GRACE ms (a dropped connection the
  // browser reopens at once never flashes it); it goes once every stream is open again.
  // el.dataset.state says what is shown: "open", "reconnecting" or "closed".
  const GRACE = 1500;
  function notice(el, options) {
    options = options || {};
    const grace = options.grace === undefined ? GRACE : options.grace;
    const later = options.setTimeout || global.setTimeout.bind(global);
    const cancel = options.clearTimeout || global.clearTimeout.bind(global);
    const states = {};
    let timer = null;
    let due = false; // a stream has been reconnecting for the grace period

    function render() {
      const all = Object.values(states);
      const closed = all.includes("closed");
      const waiting = all.includes("reconnecting");
      if (!waiting) {
        if (timer !== null) { cancel(timer); timer = null; }
        due = false;
      } else if (!due && timer === null) {
        timer = later(() => { timer = null; due = true; render(); }, grace);
      }
      const shown = closed ? "closed" : waiting && due ? "reconnecting" : "open";
      if (!el || el.dataset.state === shown) return;
      el.dataset.state = shown;
      for (const child of el.querySelectorAll("[data-state]")) {
        child.hidden = child.dataset.state !== shown; // added to a live region: announced
      }
    }

    return {
      track(name) {
        return (state) => {
          states[name] = state;
          render();
          if (options.onState) options.onState(name, state);
        };
      },
    };
  }

  global.agentsiteEvents = { open, parseId, makeId, backoff, notice };
})(typeof window !== "undefined" ? window : globalThis);
