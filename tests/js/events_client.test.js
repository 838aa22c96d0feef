// static/agentsite/events.js against a scripted EventSource: duplicates dropped, gaps refetched,
// a stream the browser gave up on (non-200) reopened with backoff, from the last id.
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");
const test = require("node:test");
const vm = require("node:vm");

vm.runInThisContext(fs.readFileSync(
  path.join(__dirname, "..", "..", "static", "agentsite", "events.js"), "utf8"));
const { open, parseId, backoff } = globalThis.agentsiteEvents;

// Each connection gets the events the "server" would send for the lastEventId it asks for.
function fakeSource(serve) {
  const made = [];
  class FakeEventSource {
    constructor(url) {
      this.url = url;
      this.readyState = 1;
      this.listeners = {};
      made.push(this);
    }
    addEventListener(type, fn) { this.listeners[type] = fn; }
    close() { this.readyState = 2; }
    opened() { if (this.listeners.open) this.listeners.open({}); }
    // The browser's error: 2 (CLOSED) after a non-200 answer, 0 (CONNECTING) after a drop.
    error(readyState) { this.readyState = readyState; this.onerror({}); }
    emit(type, id, data) {
      if (this.readyState === 2) return;
      this.listeners[type]({ lastEventId: id, data: JSON.stringify(data) });
    }
  }
  return { FakeEventSource, made, serve };
}

test("parses composite ids", () => {
  assert.deepStrictEqual(parseId("run-1:4,reviewers:9"), { "run-1": 4, reviewers: 9 });
});

test("drops replayed ids and refetches after a gap", () => {
  const { FakeEventSource, made } = fakeSource();
  const got = [];
  const stream = open("/api/runs/1/events/", { onEvent: (d) => got.push(d.n) },
    { EventSource: FakeEventSource });
  const first = made[0];
  first.emit("message", "run-1:1", { n: 1 });
  first.emit("message", "run-1:2", { n: 2 });
  first.emit("message", "run-1:2", { n: 2 }); // a duplicate
  first.emit("message", "run-1:4", { n: 4 }); // 3 was lost: reopen after 2
  assert.strictEqual(made.length, 2);
  assert.ok(made[1].url.endsWith("?lastEventId=run-1%3A2"), made[1].url);
  const second = made[1];
  for (const n of [3, 4]) second.emit("message", `run-1:${n}`, { n });
  assert.deepStrictEqual(got, [1, 2, 3, 4]);
  assert.strictEqual(stream.lastId(), "run-1:4");
});

test("a gap the store cannot fill is accepted after one retry", () => {
  const { FakeEventSource, made } = fakeSource();
  const got = [];
  const gaps = [];
  open("/x/", { onEvent: (d) => got.push(d.n), onGap: (g) => gaps.push(g) },
    { EventSource: FakeEventSource, from: "c:1" });
  assert.ok(made[0].url.endsWith("?lastEventId=c%3A1"));
  made[0].emit("message", "c:3", { n: 3 });
  made[1].emit("message", "c:3", { n: 3 });
  assert.deepStrictEqual(got, [3]);
  assert.deepStrictEqual(gaps, [{ after: "c:1", got: "c:3" }]);
  assert.strictEqual(made.length, 2);
});

test("a stream-error closes for good", () => {
  const { FakeEventSource, made } = fakeSource();
  let error = null;
  open("/x/", { onError: (e) => { error = e; } }, { EventSource: FakeEventSource });
  made[0].emit("stream-error", "error", { condition: "forbidden" });
  assert.deepStrictEqual(error, { condition: "forbidden" });
  assert.strictEqual(made[0].readyState, 2);
});

// A clock, timers and a fetch the test drives: fetch answers with the next scripted status
// (a number) or rejects (null: no answer at all).
function harness(statuses) {
  const timers = [];
  const probes = [];
  const clock = { t: 0 };
  const options = {
    now: () => clock.t,
    random: () => 0.5,
    setTimeout(fn, ms) { const t = { fn, ms }; timers.push(t); return t; },
    clearTimeout(t) { t.cancelled = true; },
    fetch(url, init) {
      probes.push({ url, init });
      const status = statuses.shift();
      return status === null ? Promise.reject(new TypeError("failed to fetch"))
        : Promise.resolve({ status });
    },
  };
  async function fire() { // run the pending timer (after the probe settled)
    await new Promise((r) => setImmediate(r));
    const t = timers.shift();
    assert.ok(t && !t.cancelled, "a reconnect was scheduled");
    t.fn();
    return t.ms;
  }
  return { timers, probes, clock, options, fire };
}

test("backoff: 1 s doubling to 30 s, half of it jittered", () => {
  assert.strictEqual(backoff(0, () => 0), 500);
  assert.strictEqual(backoff(0, () => 1), 1000);
  assert.strictEqual(backoff(3, () => 1), 8000);
  assert.strictEqual(backoff(10, () => 0), 15000);
  assert.strictEqual(backoff(10, () => 1), 30000);
});

test("a 5xx (CLOSED) reopens after a growing delay, from the last event seen", async () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([502, 503, 500, 200]);
  const got = [];
  const states = [];
  open("/api/runs/1/events/", { onEvent: (d) => got.push(d.n), onState: (s) => states.push(s),
    onError: () => assert.fail("not for good") },
  { EventSource: FakeEventSource, ...h.options });
  made[0].opened();
  made[0].emit("message", "run-1:1", { n: 1 });
  made[0].emit("message", "run-1:1.002", { n: 1.002 }); // made by the server after 1
  made[0].error(2);
  assert.strictEqual(made.length, 1); // nothing before the delay
  assert.strictEqual(h.probes[0].url, "/api/runs/1/events/?lastEventId=run-1%3A1.002");
  assert.strictEqual(h.probes[0].init.credentials, "same-origin");
  assert.strictEqual(await h.fire(), 750); // 1 s, jittered (random 0.5)
  assert.strictEqual(made.length, 2);
  assert.strictEqual(made[1].url, "/api/runs/1/events/?lastEventId=run-1%3A1.002");
  made[1].error(2);
  assert.strictEqual(await h.fire(), 1500);
  made[2].error(2);
  assert.strictEqual(await h.fire(), 3000);
  made[3].error(2); // the probe gets a 200: up again, still after the delay
  assert.strictEqual(await h.fire(), 6000);
  made[4].opened();
  made[4].emit("message", "run-1:2", { n: 2 });
  assert.deepStrictEqual(got, [1, 1.002, 2]);
  assert.deepStrictEqual(states, ["open", "reconnecting", "open"]);
});

test("an event resets the backoff, and so does a stream open for 30 s", async () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([502, 502, 502, 502]);
  open("/q/", {}, { EventSource: FakeEventSource, ...h.options });
  made[0].error(2);
  assert.strictEqual(await h.fire(), 750);
  made[1].error(2);
  assert.strictEqual(await h.fire(), 1500);
  made[2].opened();
  made[2].emit("message", "u:7", {});
  made[2].error(2);
  assert.strictEqual(await h.fire(), 750); // it delivered an event: from 1 s again
  assert.ok(made[3].url.endsWith("?lastEventId=u%3A7"));
  made[3].error(2);
  assert.strictEqual(await h.fire(), 1500);
  made[4].opened();
  h.clock.t += 30_000; // quiet but open 30 s
  made[4].error(2);
  assert.strictEqual(await h.fire(), 750);
});

test("a stream from now on resumes from its stream-open id when refused before any event", async () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([502]);
  const got = [];
  open("/api/events/", { onEvent: (d) => got.push(d.n) }, { EventSource: FakeEventSource, ...h.options });
  made[0].opened();
  made[0].emit("stream-open", "reviewers:41", "");
  made[0].error(2); // refused (a proxy's 502) before any queue change came
  assert.strictEqual(h.probes[0].url, "/api/events/?lastEventId=reviewers%3A41");
  await h.fire();
  assert.strictEqual(made[1].url, "/api/events/?lastEventId=reviewers%3A41");
  // The reopened stream names the same "now" (it resumes): no effect; then the change
  // made while it was away.
  made[1].emit("stream-open", "reviewers:45", "");
  made[1].emit("message", "reviewers:42", { n: 42 });
  assert.deepStrictEqual(got, [42]);
});

test("a dropped connection is left to the browser (it reconnects with Last-Event-ID)", () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([]);
  const states = [];
  open("/q/", { onState: (s) => states.push(s) }, { EventSource: FakeEventSource, ...h.options });
  made[0].opened();
  made[0].error(0);
  assert.deepStrictEqual(states, ["open", "reconnecting"]);
  assert.strictEqual(h.probes.length, 0);
  assert.strictEqual(made.length, 1);
  made[0].readyState = 1;
  made[0].opened();
  assert.deepStrictEqual(states, ["open", "reconnecting", "open"]);
});

for (const status of [401, 403, 404]) {
  test(`a ${status} ends the stream for good`, async () => {
    const { FakeEventSource, made } = fakeSource();
    const h = harness([status]);
    let error = null;
    const states = [];
    open("/x/", { onError: (e) => { error = e; }, onState: (s) => states.push(s) },
      { EventSource: FakeEventSource, ...h.options });
    made[0].error(2);
    await new Promise((r) => setImmediate(r));
    assert.deepStrictEqual(error, { condition: "closed", status });
    assert.strictEqual(h.timers.length, 0);
    assert.strictEqual(made.length, 1);
    assert.deepStrictEqual(states, ["reconnecting", "closed"]);
  });
}

test("no answer to the probe (proxy down) retries; close() cancels the wait", async () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([null, 502]);
  const stream = open("/x/", {}, { EventSource: FakeEventSource, ...h.options });
  made[0].error(2);
  assert.strictEqual(await h.fire(), 750);
  made[1].error(2);
  await new Promise((r) => setImmediate(r));
  assert.strictEqual(h.timers.length, 1);
  stream.close();
  assert.ok(h.timers[0].cancelled);
  assert.strictEqual(made.length, 2);
});

test("a late probe answer after close() does nothing", async () => {
  const { FakeEventSource, made } = fakeSource();
  const h = harness([401]);
  let error = null;
  const stream = open("/x/", { onError: (e) => { error = e; } },
    { EventSource: FakeEventSource, ...h.options });
  made[0].error(2);
  stream.close();
  await new Promise((r) => setImmediate(r));
  assert.strictEqual(error, null);
  assert.strictEqual(h.timers.length, 0);
});

test("notice: Reconnecting… after the grace period, gone once every stream is open", () => {
  const timers = [];
  const child = (state) => ({ dataset: { state }, hidden: true });
  const children = [child("reconnecting"), child("closed")];
  const el = { dataset: { state: "open" }, querySelectorAll: () => children };
  const shown = () => [el.dataset.state, children.filter((c) => !c.hidden).map((c) => c.dataset.state)];
  const live = globalThis.agentsiteEvents.notice(el, {
    setTimeout(fn, ms) { const t = { fn, ms }; timers.push(t); return t; },
    clearTimeout(t) { t.cancelled = true; },
  });
  const run = live.track("run");
  const queue = live.track("queue");
  run("open");
  queue("open");
  run("reconnecting");
  assert.deepStrictEqual(shown(), ["open", []]); // not at once: a quick reconnect never shows
  assert.strictEqual(timers[0].ms, 1500);
  run("open"); // back within the grace period
  assert.ok(timers[0].cancelled);
  run("reconnecting");
  queue("reconnecting");
  timers[1].fn();
  assert.deepStrictEqual(shown(), ["reconnecting", ["reconnecting"]]);
  run("open");
  assert.deepStrictEqual(shown(), ["reconnecting", ["reconnecting"]]); // the queue still waits
  queue("open");
  assert.deepStrictEqual(shown(), ["open", []]);
  queue("closed"); // ended for good (access lost): says so, and stays
  assert.deepStrictEqual(shown(), ["closed", ["closed"]]);
});
