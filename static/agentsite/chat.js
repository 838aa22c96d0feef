/*
 * The chat page, live. The page is rendered on the server with the truth so far; this
 * follows the run's AG-UI events (through agentsiteEvents, static/agentsite/events.js)
 * from the event the server rendered up to, and the user's queue changes (/api/events/):
 *   TEXT_MESSAGE_CONTENT → append to the assistant message (an aria-live region)
 *   MESSAGES_SNAPSHOT → the assistant message as it stands (a retried attempt's cut-off
 *     text is replaced, not repeated)
 *   STEP_STARTED / STEP_FINISHED → the step in the status line
 *   TOOL_CALL_* → tool chips
 *   RUN_FINISHED / RUN_ERROR → fetch the run's server-rendered block (its cards, the
 *     result as safe markdown, the error and its Retry form, the tokens used) and the
 *     composer, and swap them in
 *   CUSTOM "agentsite.retrying" → the retry banner ("… Retrying in 20 s (attempt 2 of
 *     5)"), counting down; the next event of the run (its next attempt) hides it
 *   interrupts_changed → the same, for the run named (answered in another tab or by
 *     someone else), keeping any card that is still pending as it is (typed text stays);
 *     a queue stream-reset (changes lost in an outage) → every run on the page re-read.
 * While a stream waits to reopen (refused, or its server down) the server-rendered
 * #stream-notice says "Reconnecting…" (agentsiteEvents.notice); once it is back the
 * stream resumes from its last event and the notice goes.
 * Agent and user text is only ever set as text (textContent), never as HTML.
 */
(function () {
  "use strict";
  const chat = document.getElementById("chat");
  if (!chat || !window.agentsiteEvents) return;
  const runId = chat.dataset.runId;
  const byId = (id) => document.getElementById(id);
  const STATUS = { queued: "Queued", running: "Running", paused: "Paused", resuming: "Resuming",
    completed: "Completed", rejected: "Rejected", blocked: "Blocked", failed: "Failed",
    cancelled: "Cancelled", expired: "Expired", retrying: "Retrying" };
  const RETRYING = "agentsite.retrying";

  // The run's status, everywhere the page shows it: the header's pill and the run's own
  // footer (one source, so they never disagree until a reload).
  function setStatus(status) {
    const pill = byId("run-status");
    if (!pill || !status) return;
    pill.className = "status status--" + status;
    pill.querySelector(".status__label").textContent = STATUS[status] || status;
    const foot = byId("run-" + runId);
    const own = foot && foot.querySelector(".run__foot [data-run-status]");
    if (own) {
      own.className = "status status--" + status;
      own.textContent = STATUS[status] || status;
    }
    chat.dataset.runStatus = status;
    if (status !== "running") setStep("");
  }

  function setStep(name) {
    const step = byId("run-step");
    if (step) step.textContent = name ? " · " + name : "";
  }

  async function fetchHtml(url) {
    const response = await fetch(url, { credentials: "same-origin",
      headers: { "HX-Request": "true", "Accept": "text/html" } });
    if (!response.ok) throw new Error(url + " → " + response.status);
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    return template.content;
  }

  // One refresh per run at a time; a request during one runs once more after it.
  const inflight = {};
  function refreshRun(id, opts) {
    const state = inflight[id];
    if (state) { state.again = true; state.focus = state.focus || (opts && opts.focus); return state.promise; }
    const entry = inflight[id] = { again: false, focus: opts && opts.focus };
    entry.promise = (async () => {
      try {
        do {
          entry.again = false;
          await swapRun(id, entry.focus);
        } while (entry.again);
      } catch (err) {
        console.warn("agentsite: refresh failed", err);
      } finally {
        delete inflight[id];
      }
    })();
    return entry.promise;
  }

  async function swapRun(id, focus) {
    // The run's block says where it is served (pages:run): every run refreshed is on the page.
    const shown = byId("run-" + id);
    if (!shown || !shown.dataset.url) return;
    const fresh = (await fetchHtml(shown.dataset.url)).querySelector(".run");
    if (!fresh) return;
    const old = byId("run-" + id);
    const newCards = [];
    // Moving a kept card (below) drops the focus inside it; it is given back after.
    const active = document.activeElement;
    // A card that had the focus and is answered now (here or elsewhere) is replaced: the
    // focus goes on to the next pending card.
    const hadFocus = active && active.closest && active.closest(".card[data-interrupt-id]");
    for (const card of fresh.querySelectorAll(".card[data-interrupt-id]")) {
      const before = old && old.querySelector('.card[data-interrupt-id="' + card.dataset.interruptId + '"]');
      if (before && before.dataset.status === card.dataset.status &&
          before.querySelector("form") && card.querySelector("form")) {
        card.replaceWith(before); // still pending and answerable: keep what was typed
      } else if (!before && card.dataset.status === "pending") {
        newCards.push(card);
      }
    }
    if (old) old.replaceWith(fresh); else byId("transcript").appendChild(fresh);
    if (active && active !== document.body && active !== document.activeElement &&
        document.contains(active)) active.focus({ preventScroll: true });
    if (window.htmx) window.htmx.process(fresh);
    if (window.agentsiteCards) window.agentsiteCards.init(fresh);
    if (id === runId) setStatus(fresh.dataset.status);
    if (newCards.length && (focus || !document.activeElement || document.activeElement === document.body)) {
      newCards[0].focus();
      newCards[0].scrollIntoView({ block: "nearest" });
    }
    const successor = hadFocus && !document.contains(hadFocus) && hadFocus.id && byId(hadFocus.id);
    if (successor && window.agentsiteCards) window.agentsiteCards.focusNextPending(successor);
  }

  // One composer refresh at a time, as for runs: a request during one runs once more
  // after it, so a slow answer never replaces a newer one (it said "waiting to retry"
  // under a run already running again).
  let composer = null;
  function refreshComposer() {
    if (composer) { composer.again = true; return composer.promise; }
    const entry = composer = { again: false };
    entry.promise = (async () => {
      try {
        do {
          entry.again = false;
          await swapComposer();
        } while (entry.again);
      } catch (err) {
        console.warn("agentsite: composer refresh failed", err);
      } finally {
        composer = null;
      }
    })();
    return entry.promise;
  }

  async function swapComposer() {
    const box = byId("composer-box");
    const fragment = await fetchHtml(chat.dataset.composerUrl);
    const typed = byId("composer-input") && byId("composer-input").value;
    box.replaceChildren(fragment);
    const input = byId("composer-input");
    if (input && typed && !input.value) input.value = typed;
  }

  function assistantText(messageId) {
    let msg = byId("msg-" + messageId);
    if (!msg) {
      const run = byId("run-" + runId);
      if (!run) return null;
      msg = document.createElement("article");
      msg.className = "msg msg--assistant";
      msg.id = "msg-" + messageId;
      msg.dataset.messageId = messageId;
      const text = document.createElement("div");
      text.className = "msg__text msg__text--plain";
      text.setAttribute("aria-live", "polite");
      msg.appendChild(text);
      run.insertBefore(msg, byId("cards-" + runId));
    }
    msg.classList.remove("msg--empty");
    let text = msg.querySelector(".msg__text");
    if (text.classList.contains("prose")) {
      // Rendered markdown of an earlier segment: stream the new text after it.
      let more = msg.querySelector(".msg__more");
      if (!more) {
        more = document.createElement("div");
        more.className = "msg__text msg__text--plain msg__more";
        more.setAttribute("aria-live", "polite");
        msg.appendChild(more);
      }
      text = more;
    }
    text.classList.remove("msg__text--empty");
    return text;
  }

  // MESSAGES_SNAPSHOT: the run's assistant message as it stands. A retried attempt
  // sends one before streaming anew what a cut-off attempt had begun: the text shown is
  // replaced, not appended to. (Rendered markdown of earlier segments stays: its
  // data-length says how much of the message it holds, in code points.)
  function restate(messages) {
    const run = byId("run-" + runId);
    for (const message of messages || []) {
      if (message.role !== "assistant" || !run) continue;
      const msg = run.querySelector('[data-message-id="' + CSS.escape(message.id) + '"]');
      if (!msg) continue;
      const content = message.content || "";
      const prose = msg.querySelector(".msg__text.prose");
      const rest = prose ? Array.from(content).slice(Number(prose.dataset.length) || 0).join("")
        : content;
      const shown = prose ? msg.querySelector(".msg__more") : msg.querySelector(".msg__text");
      if ((shown ? shown.textContent : "") === rest) continue;
      const text = shown || assistantText(message.id);
      if (text) text.textContent = rest;
    }
  }

  function chip(callId, name) {
    const list = byId("tools-" + runId);
    if (!list) return null;
    let item = list.querySelector('[data-tool-call-id="' + CSS.escape(callId) + '"]');
    if (item || name === undefined) return item;
    item = document.createElement("li");
    item.className = "chip";
    item.dataset.toolCallId = callId;
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    const label = document.createElement("span");
    label.className = "chip__name";
    label.textContent = name;
    summary.append("⚙ ", label);
    const body = document.createElement("dl");
    body.className = "chip__body";
    for (const [title, cls, text] of [["Arguments", "chip__args", ""], ["Result", "chip__result", "…"]]) {
      const dt = document.createElement("dt");
      dt.textContent = title;
      const dd = document.createElement("dd");
      const code = document.createElement("code");
      code.className = cls;
      code.textContent = text;
      dd.appendChild(code);
      body.append(dt, dd);
    }
    details.append(summary, body);
    item.appendChild(details);
    list.appendChild(item);
    return item;
  }

  // The retry banner: rendered by the server while the run waits (data-seconds: how long
  // from the page's render), set here from each "agentsite.retrying" event. The countdown
  // counts from when this page learnt the delay, so it needs no clock agreement.
  let retryTimer = null;
  function showRetrying(reason, seconds, attempt, of) {
    const banner = byId("retry-banner");
    if (!banner) return;
    const due = Date.now() + Math.max(0, Number(seconds) || 0) * 1000;
    banner.querySelector(".retry__reason").textContent =
      String(reason || "The run is being retried").replace(/[.\s]+$/, "");
    banner.querySelector(".retry__attempt").textContent =
      attempt && seconds > 0 ? " (attempt " + attempt + " of " + of + ")" : "";
    const when = banner.querySelector(".retry__when");
    const tick = () => {
      const left = Math.ceil((due - Date.now()) / 1000);
      when.textContent = left > 0 ? "in " + left + " s" : "now";
      if (left <= 0 && retryTimer) { clearInterval(retryTimer); retryTimer = null; }
    };
    if (retryTimer) clearInterval(retryTimer);
    retryTimer = setInterval(tick, 1000);
    tick();
    banner.hidden = false;
  }

  function hideRetrying() {
    const banner = byId("retry-banner");
    if (retryTimer) { clearInterval(retryTimer); retryTimer = null; }
    if (banner) banner.hidden = true;
  }

  function onRunEvent(event) {
    if (event.type === "CUSTOM" && event.name === RETRYING) {
      const value = event.value || {};
      setStatus("retrying");
      showRetrying(value.reason, value.delaySeconds, value.attempt, value.of);
      refreshComposer();
      return;
    }
    if (event.type !== "CUSTOM" && !byId("retry-banner").hidden) {
      // The next attempt has begun (or the run ended): no longer waiting. The run's
      // start and end set the status and the composer themselves (below).
      hideRetrying();
      const own = ["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"].includes(event.type);
      if (chat.dataset.runStatus === "retrying" && !own) {
        setStatus("running");
        refreshComposer();
      }
    }
    switch (event.type) {
      case "RUN_STARTED":
        setStatus("running");
        refreshComposer();
        break;
      case "TEXT_MESSAGE_CONTENT": {
        const text = assistantText(event.messageId);
        if (text) text.append(event.delta);
        break;
      }
      case "MESSAGES_SNAPSHOT":
        restate(event.messages);
        break;
      case "STEP_STARTED":
        setStep(event.stepName);
        break;
      case "STEP_FINISHED":
        setStep("");
        break;
      case "TOOL_CALL_START":
        chip(event.toolCallId, event.toolCallName || "tool");
        break;
      case "TOOL_CALL_ARGS": {
        const item = chip(event.toolCallId);
        if (item) item.querySelector(".chip__args").append(event.delta);
        break;
      }
      case "TOOL_CALL_RESULT": {
        const item = chip(event.toolCallId);
        if (item) {
          item.querySelector(".chip__result").textContent = event.content;
          // A call a person rejected (or answered instead) did not run: no ✓.
          if (!["reject", "respond"].includes(item.dataset.decision)) item.classList.add("chip--done");
        }
        break;
      }
      case "RUN_FINISHED":
        refreshRun(runId, { focus: true });
        refreshComposer();
        break;
      case "RUN_ERROR":
        // The error shows once, on the run (its block: the plain error, the technical
        // details and the Retry form), not in a header notice as well.
        setStatus("failed");
        refreshRun(runId, {});
        refreshComposer();
        break;
      default:
        break;
    }
  }

  const banner = byId("retry-banner");
  if (banner && !banner.hidden && banner.dataset.seconds !== undefined) {
    const attempt = banner.querySelector(".retry__attempt").textContent.match(/(\d+) of (\d+)/);
    showRetrying(banner.querySelector(".retry__reason").textContent, banner.dataset.seconds,
      attempt && attempt[1], attempt && attempt[2]);
  }

  // "Reconnecting…" while either stream waits to reopen (the run's or the queue's).
  const live = window.agentsiteEvents.notice(byId("stream-notice"));
  if (runId && chat.dataset.eventsUrl) {
    window.agentsiteEvents.open(chat.dataset.eventsUrl, {
      onEvent: onRunEvent,
      onGap: () => refreshRun(runId, {}),
      onState: live.track("run"),
    }, { from: chat.dataset.lastEventId || "" });
  }
  window.agentsiteEvents.open(chat.dataset.queueUrl, {
    onState: live.track("queue"),
    // Queue changes were lost (a Redis outage, the edge forwarder away): re-read the runs.
    onGap() {
      document.querySelectorAll("section.run[data-run-id]").forEach((run) => {
        refreshRun(run.dataset.runId, {});
      });
      refreshComposer();
    },
    onEvent(data) {
      // Other scripts follow the queue too (presence.js): each event passed on.
      document.dispatchEvent(new CustomEvent("agentsite:queue-event", { detail: data }));
      if (data && data.type === "interrupts_changed" && byId("run-" + data.run_id)) {
        refreshRun(data.run_id, {});
        if (data.run_id === runId) refreshComposer();
      }
    },
  });

  // A card answered in place: the composer may open up (nothing left pending).
  document.body.addEventListener("htmx:afterRequest", () => refreshComposer());
  chat.dataset.live = "true";
})();
