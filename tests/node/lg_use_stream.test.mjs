// useStream's engine, as Agent Chat UI runs it: the framework-free StreamOrchestrator of
// @langchain/langgraph-sdk/ui (the React hook wraps it) against agentsite's /lg, on the
// `dev` agent: submit a message (streamMode values + messages-tuple, a new thread), show
// the interrupt, resume with `command`, and after a reload (a new orchestrator on the
// thread: its history) go on to the end.
// Started by tests/lgapi/test_js_use_stream.py with AGENTSITE_URL and AGENTSITE_TOKEN set.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@langchain/langgraph-sdk";
import { StreamOrchestrator } from "@langchain/langgraph-sdk/ui";

const BASE = process.env.AGENTSITE_URL;
const TOKEN = process.env.AGENTSITE_TOKEN;
assert.ok(BASE && TOKEN, "AGENTSITE_URL and AGENTSITE_TOKEN must be set");

const client = new Client({ apiUrl: `${BASE}/lg`, apiKey: TOKEN });

function chat(threadId) {
  // What useStream({ apiUrl, assistantId: "dev", fetchStateHistory: true }) builds.
  const ui = new StreamOrchestrator(
    { assistantId: "dev", messagesKey: "messages", fetchStateHistory: true },
    { getClient: () => client, getAssistantId: () => "dev", getMessagesKey: () => "messages" });
  ui.initThreadId(threadId);
  // The React hook drains the queue of runs sent while busy whenever isLoading or the
  // queue's size changes (the orchestrator's drainQueue: "Framework adapters should call
  // this"); without that, a run queued after the current stream ended waits forever.
  ui.subscribe(() => ui.drainQueue());
  return ui;
}

async function settled(ui) {
  for (let i = 0; i < 200 && (ui.isLoading || ui.isThreadLoading); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(ui.isLoading, false);
  assert.equal(ui.error, undefined);
}

test("a dev conversation through useStream's orchestrator", async () => {
  const ui = chat(undefined);
  await ui.submit({ messages: [{ type: "human", content: "hello" }], topic: "ui" },
                  { streamMode: ["values", "messages-tuple"] });
  await settled(ui);
  const tid = ui.threadId;
  assert.ok(tid, "a thread was made for the first message");
  assert.equal(ui.values.topic, "ui");
  assert.deepEqual(ui.messages.map((m) => [m.type, m.content]), [["human", "hello"]]);
  assert.equal(ui.interrupt.value.type, "input");

  await ui.submit(undefined, { command: { resume: { value: "Apollo" } } });
  await settled(ui);
  assert.equal(ui.values.name, "Apollo");
  assert.equal(ui.interrupt.value.type, "select");
  await ui.submit(undefined, { command: { resume: { value: "green" } } });
  await settled(ui);
  assert.equal(ui.interrupt.value.type, "multiSelect");

  // A reload: a new orchestrator on the thread reads its state and history, and shows
  // the question still open; the answer goes from there.
  const again = chat(tid);
  await settled(again);
  assert.equal(again.interrupt.value.type, "multiSelect");
  assert.ok(again.flatHistory.length > 0);
  await again.submit(undefined, { command: { resume: { values: ["metrics"] } } });
  await settled(again);
  assert.equal(again.interrupt.value.type, "approval");
  await again.submit(undefined, { command: { resume: { approved: true } } });
  await settled(again);
  assert.equal(again.interrupt, undefined);
  assert.equal(again.values.outcome, "completed");
  assert.equal((await client.threads.get(tid)).status, "idle");
});

test("a message sent while the agent works is queued (enqueue) and runs after", async () => {
  const ui = chat(undefined);
  const first = ui.submit({ messages: [{ type: "human", content: "one" }], topic: "first" });
  // Until the first run is made (the thread id is known before its run is started).
  for (let i = 0; i < 400; i++) {
    if (ui.threadId && (await client.runs.list(ui.threadId)).length) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(ui.isLoading, "the first run still streams");
  // Sent while loading: useStream creates it with multitaskStrategy "enqueue".
  // (Queued on the client until the first stream ends; it may have ended already, and
  // the queue drained: the server's statuses below show the run waiting.)
  await ui.submit({ messages: [{ type: "human", content: "two" }], topic: "second" });
  await first;
  const tid = ui.threadId;
  const runs = await client.runs.list(tid);
  assert.deepEqual(runs.map((r) => r.status), ["pending", "interrupted"]);
  // The first run waits for answers and keeps the thread; answered to its end (here from
  // another client), the queued run starts and the orchestrator shows its question.
  for (const resume of [{ value: "A" }, { value: "red" }, { values: ["metrics"] },
                        { approved: true }]) {
    await client.runs.wait(tid, "dev", { command: { resume } });
  }
  for (let i = 0; i < 400 && (ui.pendingRuns.size || ui.isLoading || !ui.interrupt); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(ui.values.topic, "second");
  assert.equal(ui.interrupt.value.type, "input");
  assert.deepEqual((await client.runs.list(tid)).map((r) => r.status),
                   ["interrupted", "success"]);
});
