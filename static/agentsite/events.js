/*
 * Live events from agentsite: django-eventstream's SSE format, served by streams/sse.py.
 *
 *   const stream = agentsiteEvents.open("/api/runs/<id>/events/", {
 *     onEvent(data, meta) { ... },   // data: the parsed JSON (an AG-UI event, or a queue change)
 *     onError(info) { ... },         // the stream is closed for good (401/404, access revoked)
 *     onGap(info) { ... },           // events the store no longer has (expired after 24 h):
 *                                    // rebuild from the REST / AG-UI connect API
 *   });
 *   stream.close();
 *
 * Every event id is "<channel>:<n>" (n grows by one per channel; several channels are
 * joined with ","). The browser reconnects by itself and sends Last-Event-ID; the server
 * then replays what was missed. This wrapper:
 *   - drops any event whose id it has already seen (a replay can repeat events), and
 *   - when a number is skipped (n > last + 1) reopens the stream after the last event it
 *     has, so the server replays the missing ones: the handler sees each event once, in order.
 * Options: `from` — an id to resume after (e.g. kept across a page reload with stream.lastId()).
 */
(function (global) {
  "use strict";

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

  function open(url, handlers, options) {
    handlers = handlers || {};
    options = options || {};
    const Source = options.EventSource || global.EventSource;
    const seen = parseId(options.from || "");
    let source = null;
    let closed = false;
    let retriedFrom = null; // a gap the store cannot fill (expired events) is retried once

    function connect() {
      const from = makeId(seen);
      const target = from ? url + (url.includes("?") ? "&" : "?") + "lastEventId=" +
        encodeURIComponent(from) : url;
      source = new Source(target, { withCredentials: !!options.withCredentials });
      source.addEventListener("message", onMessage);
      source.addEventListener("stream-error", (e) => fail(JSON.parse(e.data)));
      source.addEventListener("stream-reset", (e) => {
        if (handlers.onGap) handlers.onGap(JSON.parse(e.data)); // (a store that knows it lost some)
      });
      source.onerror = () => {
        // CONNECTING: the browser retries by itself. CLOSED: refused (e.g. 401/404).
        if (source.readyState === 2) fail({ condition: "closed" });
      };
    }

    function onMessage(e) {
      const ids = parseId(e.lastEventId);
      const channels = Object.keys(ids);
      const newer = channels.filter((c) => seen[c] === undefined || ids[c] > seen[c]);
      if (channels.length && !newer.length) return; // seen already: drop it
      const gap = newer.some((c) => seen[c] !== undefined && ids[c] > seen[c] + 1);
      if (gap && retriedFrom !== makeId(seen)) {
        retriedFrom = makeId(seen);
        source.close(); // ask again from the last event we have
        if (!closed) connect();
        return;
      }
      if (gap && handlers.onGap) handlers.onGap({ after: makeId(seen), got: e.lastEventId });
      for (const c of newer) seen[c] = ids[c];
      if (handlers.onEvent) handlers.onEvent(JSON.parse(e.data), { id: e.lastEventId });
    }

    function fail(info) {
      if (closed) return;
      closed = true;
      source.close();
      if (handlers.onError) handlers.onError(info);
    }

    connect();
    return {
      close() { closed = true; source.close(); },
      lastId() { return makeId(seen); },
    };
  }

  global.agentsiteEvents = { open, parseId, makeId };
})(typeof window !== "undefined" ? window : globalThis);
