/*
 * The admin approval queue, live (no inline script: loaded by the queue's templates).
 *
 * - On the queue (#queue-live): every "interrupts_changed" event from /api/events/
 *   re-reads the changelist at its current URL (filters, search, page) and swaps in the
 *   rows, the paginator and the counts: new pending rows appear, decided rows leave.
 *   Ticked rows stay ticked.
 * - On a decide page (#decide-live): an event for this interrupt's run re-reads the
 *   interrupt (/api/interrupts/<id>/); once someone has answered it, the page says
 *   who, and its form is disabled.
 * - Both: while the stream waits to reopen (refused, or its server down), #stream-notice
 *   says "Reconnecting…"; once it is open again the page re-reads what it shows (the
 *   stream also replays the changes it missed, from its last id or from its open). A
 *   `stream-reset` (onGap: queue changes were lost in a Redis outage, or while the edge
 *   forwarder was away) has it re-read what it shows too.
 */
(function () {
  "use strict";

  // The queue stream, with the page's "Reconnecting…" notice (#stream-notice) while it
  // waits to reopen; `reopened()` runs when it is open again after that (the stream
  // replays what it missed; the page may also re-read what it shows), and when the
  // server says changes were lost (stream-reset).
  function onQueueChange(url, handle, reopened) {
    if (!window.agentsiteEvents) return null;
    const live = window.agentsiteEvents.notice(document.getElementById("stream-notice"));
    const track = live.track("queue");
    let away = false;
    return window.agentsiteEvents.open(url, {
      onEvent(data) {
        // Other scripts follow the queue too (presence.js): each event passed on.
        document.dispatchEvent(new CustomEvent("agentsite:queue-event", { detail: data }));
        if (data && data.type === "interrupts_changed") handle(data);
      },
      onGap() {
        if (reopened) reopened();
      },
      onState(state) {
        track(state);
        if (state === "reconnecting") away = true;
        else if (state === "open" && away) {
          away = false;
          if (reopened) reopened();
        }
      },
    });
  }

  // --- the queue ---------------------------------------------------------------

  function setupQueue(root) {
    let busy = false;
    let again = false;

    function swap(doc, selector) {
      const now = document.querySelector(selector);
      const fresh = doc.querySelector(selector);
      if (now && fresh) now.replaceWith(document.importNode(fresh, true));
      return !!(now && fresh);
    }

    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => {
          const doc = new DOMParser().parseFromString(html, "text/html");
          const ticked = new Set(Array.from(
            document.querySelectorAll("#changelist-form input.action-select:checked"),
          ).map((el) => el.value));
          if (swap(doc, "#changelist-form")) {
            const boxes = document.querySelectorAll("#changelist-form input.action-select");
            boxes.forEach((el) => { el.checked = ticked.has(el.value); });
            if (window.Actions && boxes.length) window.Actions(boxes);
          }
          swap(doc, "#changelist-search .quiet"); // the "N results" line, not the input
          swap(doc, "#queue-count");
          swap(doc, "#changelist-filter");
          root.dataset.updated = String(Number(root.dataset.updated || 0) + 1);
        })
        .catch(() => { /* the next event tries again */ })
        .finally(() => {
          busy = false;
          if (again) { again = false; refresh(); }
        });
    }

    onQueueChange(root.dataset.eventsUrl, refresh, refresh);
    root.dataset.live = "open";
  }

  // --- a decide page -------------------------------------------------------------

  function setupDecide(root) {
    const runId = root.dataset.runId;
    let submitting = false;
    document.querySelectorAll("form[data-interrupt-id]").forEach((form) => {
      form.addEventListener("submit", () => { submitting = true; });
    });

    function lock(info) {
      const who = info.decided_by ? "by " + info.decided_by : "";
      const what = info.status === "decided" || info.status === "applied" ? "Decided" :
        info.status.charAt(0).toUpperCase() + info.status.slice(1);
      root.textContent = what + (who ? " " + who : "") +
        " while this page was open. This form no longer takes an answer.";
      root.hidden = false;
      root.dataset.status = info.status;
      document.querySelectorAll("form[data-interrupt-id]").forEach((form) => {
        form.classList.add("queue-form-closed");
        form.querySelectorAll("input, select, textarea, button").forEach((el) => {
          el.disabled = true;
        });
      });
      document.querySelectorAll(".queue-after").forEach((el) => { el.hidden = true; });
      const status = document.getElementById("decide-status");
      if (status) status.textContent = info.status + (who ? " " + who : "");
    }

    function check() {
      fetch(root.dataset.interruptUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
        .then((info) => {
          if (info.status !== "pending" && !submitting) lock(info);
        })
        .catch(() => {});
    }

    if (root.dataset.status !== "pending") return;
    onQueueChange(root.dataset.eventsUrl, (data) => {
      if (!data.run_id || data.run_id === runId) check();
    }, check);
    root.dataset.live = "open";
  }

  function start() {
    const queue = document.getElementById("queue-live");
    if (queue) setupQueue(queue);
    const decide = document.getElementById("decide-live");
    if (decide) setupDecide(decide);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
