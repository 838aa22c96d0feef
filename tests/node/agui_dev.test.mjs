// The `dev` agent driven by the official AG-UI client (@ag-ui/client HttpAgent) against a
// live agentsite: run → pendingInterrupts → buildResumeArray → resume → … → success.
// Started by tests/test_agui_node.py with AGENTSITE_URL and AGENTSITE_TOKEN set.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, test } from "node:test";

import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const BASE = process.env.AGENTSITE_URL;
const TOKEN = process.env.AGENTSITE_TOKEN;
assert.ok(BASE && TOKEN, "AGENTSITE_URL and AGENTSITE_TOKEN must be set");

// Any client-side validation complaint (the client warns when it strips or translates
// something it does not accept) fails the test.
let complaints = [];
const original = { warn: console.warn, error: console.error };
beforeEach(() => {
  complaints = [];
  console.warn = (...args) => complaints.push(["warn", ...args]);
  console.error = (...args) => complaints.push(["error", ...args]);
});
afterEach(() => {
  console.warn = original.warn;
  console.error = original.error;
});

function makeAgent(threadId = randomUUID()) {
  return new HttpAgent({
    url: `${BASE}/agui/dev/`,
    headers: { Authorization: `Token ${TOKEN}` },
    threadId,
  });
}

function watcher() {
  const seen = { errors: [], finished: [], types: [] };
  return {
    seen,
    subscriber: {
      onEvent: ({ event }) => { seen.types.push(event.type); },
      onRunErrorEvent: ({ event }) => { seen.errors.push(event); },
      onRunFailed: ({ error }) => { seen.errors.push(error); },
      onRunFinishedEvent: ({ event }) => { seen.finished.push(event); },
    },
  };
}

async function answer(agent, payload, status = "resolved") {
  assert.equal(agent.pendingInterrupts.length, 1, "one pending interrupt");
  const [pending] = agent.pendingInterrupts;
  const response = status === "resolved" ? { status, payload } : { status };
  const resume = buildResumeArray(agent.pendingInterrupts, { [pending.id]: response });
  const { seen, subscriber } = watcher();
  const result = await agent.runAgent({ resume }, subscriber);
  assert.deepEqual(seen.errors, []);
  return { result, seen, pending };
}

test("run → interrupts → resume → … → success", async () => {
  const agent = makeAgent();
  const { seen, subscriber } = watcher();
  await agent.runAgent({ forwardedProps: { input: { topic: "node" } } }, subscriber);
  assert.deepEqual(seen.errors, []);
  assert.equal(seen.types[0], "RUN_STARTED");
  assert.equal(seen.types.at(-1), "RUN_FINISHED");

  const kinds = [];
  const answers = [
    { value: "Orion" }, { value: "blue" }, { values: ["logging", "alerts"] }, { approved: true },
  ];
  let last;
  for (const payload of answers) {
    const [pending] = agent.pendingInterrupts;
    kinds.push(pending.metadata.type);
    assert.ok(pending.responseSchema, "interrupt carries a response schema");
    last = await answer(agent, payload);
  }
  assert.deepEqual(kinds, ["input", "select", "multiSelect", "approval"]);
  assert.equal(agent.pendingInterrupts.length, 0);
  assert.equal(last.result.result.status, "completed");
  assert.deepEqual(last.result.result.result, {
    name: "Orion", color: "blue", extras: ["logging", "alerts"], approved: true, reason: "",
  });
  const text = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
  assert.match(text, /Orion/);
  assert.equal(agent.state.outcome, "completed");
  assert.deepEqual(complaints, []);
});

test("the client refuses to run again while an interrupt is pending; so does the server",
  async () => {
    const agent = makeAgent();
    await agent.runAgent({});
    assert.equal(agent.pendingInterrupts.length, 1);
    const pendingId = agent.pendingInterrupts[0].id;
    await assert.rejects(agent.runAgent({}), (err) => {
      assert.match(String(err.message), /pending interrupt/);
      assert.match(String(err.message), new RegExp(pendingId));
      return true;
    });
    // A client that does not know about the interrupt (fresh agent, same thread): the server
    // refuses with 409 naming the pending interrupt.
    const stranger = makeAgent(agent.threadId);
    await assert.rejects(stranger.runAgent({}), (err) => {
      assert.match(String(err.message), /409/);
      return true;
    });
    complaints = complaints.filter(([, first]) => !String(first).includes("Agent execution failed"));
    assert.deepEqual(complaints, []);
  });

test("a cancelled resume ends the run as cancelled", async () => {
  const agent = makeAgent();
  await agent.runAgent({});
  const { seen } = await answer(agent, undefined, "cancelled");
  assert.equal(seen.finished.at(-1).outcome.type, "cancelled");
  assert.equal(agent.pendingInterrupts.length, 0);
  assert.deepEqual(complaints, []);
});
