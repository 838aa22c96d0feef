// The adopter agents (tests/adopter_agents.py: create_agent + HumanInTheLoopMiddleware)
// driven by the official AG-UI client (@ag-ui/client HttpAgent) to their end: batched,
// per call (two interrupts, one per gated call) and approve-only. Each answer lets two
// tool calls run at once (two tasks of the `tools` node): the client must accept the
// stream (no "Step "tools" is already active"). Started by tests/agui/test_agui_node.py
// with AGENTSITE_URL and AGENTSITE_TOKEN set.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, test } from "node:test";

import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const BASE = process.env.AGENTSITE_URL;
const TOKEN = process.env.AGENTSITE_TOKEN;
assert.ok(BASE && TOKEN, "AGENTSITE_URL and AGENTSITE_TOKEN must be set");

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

// One AG-UI run of the agent; every client-side error is collected, none thrown.
async function segment(agent, input) {
  const seen = { errors: [], types: [], steps: [] };
  const subscriber = {
    onEvent: ({ event }) => { seen.types.push(event.type); },
    onStepStartedEvent: ({ event }) => { seen.steps.push(event.stepName); },
    onRunErrorEvent: ({ event }) => { seen.errors.push(event); },
    onRunFailed: ({ error }) => { seen.errors.push(String(error)); },
  };
  try {
    await agent.runAgent(input, subscriber);
  } catch (error) {
    seen.errors.push(String(error));
  }
  return seen;
}

// Start the agent, answer each pause with `answer(interrupt)`, until the run ends.
async function toTheEnd(name, answer) {
  const agent = new HttpAgent({
    url: `${BASE}/agui/${name}/`,
    headers: { Authorization: `Token ${TOKEN}` },
    threadId: randomUUID(),
  });
  const user = { id: randomUUID(), role: "user", content: "email alice, delete the report" };
  const segments = [await segment(agent, { messages: [user] })];
  const asked = [];
  while (agent.pendingInterrupts.length && segments.length < 5) {
    asked.push(agent.pendingInterrupts.map((i) => i.metadata));
    const responses = Object.fromEntries(agent.pendingInterrupts.map(
      (i) => [i.id, { status: "resolved", payload: answer(i) }]));
    const resume = buildResumeArray(agent.pendingInterrupts, responses);
    segments.push(await segment(agent, { resume }));
  }
  for (const seen of segments) {
    assert.deepEqual(seen.errors, [], `client errors in ${seen.types}`);
    assert.equal(seen.types.at(-1), "RUN_FINISHED");
  }
  assert.equal(agent.pendingInterrupts.length, 0, "the run ended");
  assert.deepEqual(complaints, []);
  const text = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
  return { agent, asked, segments, text };
}

test("batched: one interrupt for both calls, both approved, both run at once", async () => {
  const { asked, segments, text } = await toTheEnd("adopter_batched", (i) => ({
    decisions: i.metadata.action_requests.map(() => ({ type: "approve" })) }));
  assert.deepEqual(asked.map((a) => a.length), [1]);
  assert.ok(segments[1].steps.includes("tools"), `steps ${segments[1].steps}`);
  assert.match(text, /send_email done/);
  assert.match(text, /delete_file done/);
});

test("per call: an interrupt per call, both approved at once", async () => {
  const { asked, segments, text } = await toTheEnd("adopter_per_call", () => ({ type: "approve" }));
  assert.deepEqual(asked.map((a) => a.map((m) => m.name).sort()),
    [["delete_file", "send_email"]]);
  assert.ok(segments[0].steps.includes("tools"), `steps ${segments[0].steps}`);
  assert.match(text, /send_email done/);
  assert.match(text, /delete_file done/);
});

test("approve-only: delete_file approved; send_email runs unasked beside it", async () => {
  const { asked, text } = await toTheEnd("adopter_approve_only", (i) => ({
    decisions: i.metadata.action_requests.map(() => ({ type: "approve" })) }));
  assert.deepEqual(asked.map((a) => a[0].action_requests.map((r) => r.name)), [["delete_file"]]);
  assert.match(text, /send_email done/);
  assert.match(text, /delete_file done/);
});
