/*
 * Reviewer presence (hitl.presence): who else is on an open question, live.
 *
 * Every `[data-presence-run][data-presence-interrupt]` element on the page shows who else
 * is on that question. Those with `data-presence-beat` (a card the viewer has open) also
 * renew the viewer's own entry: POST /presence/ every third of `data-presence-ttl` (a tab
 * hidden for long is throttled by the browser and drops out), as "answering" once the viewer has typed or chosen in that card,
 * else "viewing"; "left" when the card goes (answered, swapped away) or the page is left.
 * Others' changes arrive on the page's queue stream (chat.js and admin_queue.js pass each
 * event on as a `agentsite:queue-event` DOM event); an entry not renewed lapses here too.
 * Without JavaScript the element keeps what the server rendered at page load.
 */
(function () {
  "use strict";

  const known = new Map(); // "run:interrupt" → {people, timer}
  const answering = new Set(); // "run:interrupt" the viewer has typed or chosen in
  let beating = new Set(); // "run:interrupt" whose entry this page renews

  function keyOf(el) {
    return el.dataset.presenceRun + ":" + el.dataset.presenceInterrupt;
  }

  function elements() {
    return Array.from(document.querySelectorAll("[data-presence-run][data-presence-interrupt]"));
  }

  function csrf() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function render(key) {
    const entry = known.get(key);
    const people = entry ? entry.people : [];
    elements().filter((el) => keyOf(el) === key).forEach((el) => {
      const me = el.dataset.presenceMe;
      const others = people.filter((p) => String(p.user_id) !== me);
      el.textContent = "";
      others.forEach((p, i) => {
        if (i) el.append(" · ");
        const span = document.createElement("span");
        span.className = "presence__person presence__person--" + p.state;
        span.dataset.userId = p.user_id;
        span.textContent = p.state === "answering" ? p.name + " is answering…"
          : p.name + " is viewing this";
        el.append(span);
      });
      el.hidden = others.length === 0;
    });
  }

  // Who is on `key` now, each until their entry lapses (unless told again before).
  function update(key, people) {
    const now = Date.now();
    const entry = known.get(key) || { people: [], timer: null };
    entry.people = people.map((p) => ({ ...p, until: now + p.expires_in * 1000 }));
    if (entry.timer) clearTimeout(entry.timer);
    const next = Math.min(...entry.people.map((p) => p.until));
    entry.timer = entry.people.length ? setTimeout(() => {
      entry.people = entry.people.filter((p) => p.until > Date.now());
      update(key, entry.people.map((p) => ({ ...p, expires_in: (p.until - Date.now()) / 1000 })));
    }, Math.max(50, next - now + 50)) : null;
    known.set(key, entry);
    render(key);
  }

  function send(items, beacon) {
    if (!items.length) return;
    const first = elements()[0];
    const url = first ? first.dataset.presenceUrl : "/presence/";
    const body = new URLSearchParams({ csrfmiddlewaretoken: csrf(), items: JSON.stringify(items) });
    if (beacon && navigator.sendBeacon) {
      navigator.sendBeacon(url, body);
      return;
    }
    fetch(url, { method: "POST", body, credentials: "same-origin",
                 headers: { "X-CSRFToken": csrf() } })
      .then((r) => (r.ok ? r.json() : null))
      .then((data) => {
        if (!data) return;
        data.items.forEach((item) => {
          if (item.people) update(item.run_id + ":" + item.interrupt_id, item.people);
        });
      }, () => {});
  }

  function item(key, state) {
    const [run, ...rest] = key.split(":");
    return { run_id: run, interrupt_id: rest.join(":"), state };
  }

  function beat() {
    const now = new Set(elements().filter((el) => el.dataset.presenceBeat).map(keyOf));
    const gone = Array.from(beating).filter((k) => !now.has(k));
    beating = now;
    const items = gone.map((k) => item(k, "left"));
    now.forEach((k) => items.push(item(k, answering.has(k) ? "answering" : "viewing")));
    send(items);
  }

  // Typing or choosing in an open card: a soft claim, told at once.
  function onInput(e) {
    const card = e.target.closest && e.target.closest(".card");
    const el = card && card.querySelector("[data-presence-beat]");
    if (!el) return;
    const key = keyOf(el);
    if (answering.has(key)) return;
    answering.add(key);
    send([item(key, "answering")]);
  }

  // Renewed every third of the TTL the page's elements carry (cards may come later).
  function tick() {
    beat();
    const first = elements()[0];
    const ttl = (first && parseFloat(first.dataset.presenceTtl)) || 15;
    setTimeout(tick, (ttl * 1000) / 3);
  }

  function start() {
    document.addEventListener("input", onInput, true);
    document.addEventListener("change", onInput, true);
    document.addEventListener("agentsite:queue-event", (e) => {
      const data = e.detail;
      if (data && data.type === "presence") update(data.run_id + ":" + data.interrupt_id, data.people);
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") beat();
    });
    window.addEventListener("pagehide", () => {
      send(Array.from(beating).map((k) => item(k, "left")), true);
    });
    elements().forEach((el) => { if (!known.has(keyOf(el))) known.set(keyOf(el), { people: [], timer: null }); });
    tick();
    // Cards swapped in later (an answer, a live refresh) show what is known at once.
    // (Only for added elements that hold one: render() itself changes the DOM.)
    const holds = (n) => n.nodeType === 1 && !n.closest(".presence") &&
      (n.matches("[data-presence-run]") || !!n.querySelector("[data-presence-run]"));
    new MutationObserver((changes) => {
      const added = changes.some((c) => Array.from(c.addedNodes).some(holds));
      const removed = changes.some((c) => Array.from(c.removedNodes).some((n) =>
        n.nodeType === 1 && (n.matches("[data-presence-beat]") ||
                             !!n.querySelector("[data-presence-beat]"))));
      if (added) known.forEach((_v, key) => render(key));
      // A card that came (on it from now on) or went (answered: left), said at once.
      const current = new Set(elements().filter((el) => el.dataset.presenceBeat).map(keyOf));
      const differs = current.size !== beating.size ||
        Array.from(current).some((k) => !beating.has(k));
      if ((added || removed) && differs) beat();
    }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
