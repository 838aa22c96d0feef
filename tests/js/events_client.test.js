// static/agentsite/events.js against a scripted EventSource: duplicates dropped, gaps refetched.
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");
const test = require("node:test");
const vm = require("node:vm");

vm.runInThisContext(fs.readFileSync(
  path.join(__dirname, "..", "..", "static", "agentsite", "events.js"), "utf8"));
const { open, parseId } = globalThis.agentsiteEvents;

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
