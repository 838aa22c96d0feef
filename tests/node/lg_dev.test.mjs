// The `dev` agent driven by LangGraph's JS client (@langchain/langgraph-sdk Client)
// against agentsite's LangGraph Platform API (/lg): stream to an interrupt, read it in the
// thread state, resume over runs.stream and runs.wait, join, search, history, cancel.
// Started by tests/lgapi/test_js_client.py with AGENTSITE_URL and AGENTSITE_TOKEN set.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@langchain/langgraph-sdk";

const BASE = process.env.AGENTSITE_URL;
const TOKEN = process.env.AGENTSITE_TOKEN;
assert.ok(BASE && TOKEN, "AGENTSITE_URL and AGENTSITE_TOKEN must be set");

const client = new Client({ apiUrl: `${BASE}/lg`, apiKey: TOKEN });

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

test("a dev run: stream, state, resume by stream and wait, join, search, history", async () => {
  const thread = await client.threads.create({ metadata: { client: "js" } });
  const tid = thread.thread_id;
  let parts = await collect(client.runs.stream(tid, "dev", {
    input: { messages: [{ role: "user", content: "hello" }], topic: "js" },
    streamMode: ["values", "updates", "messages-tuple"],
  }));
  assert.equal(parts[0].event, "metadata");
  const runId = parts[0].data.run_id;
  const asked = parts.filter((p) => p.event === "updates" && p.data.__interrupt__);
  const question = asked.at(-1).data.__interrupt__[0];
  assert.equal(question.value.type, "input");

  const state = await client.threads.getState(tid);
  assert.deepEqual(state.interrupts.map((i) => i.id), [question.id]);
  const found = await client.threads.search({ status: "interrupted", metadata: { client: "js" } });
  assert.deepEqual(found.map((t) => t.thread_id), [tid]);

  parts = await collect(client.runs.stream(tid, "dev", {
    command: { resume: { value: "Apollo" } }, streamMode: "values",
  }));
  const values = parts.filter((p) => p.event === "values").map((p) => p.data);
  assert.equal(values.at(-1).name, "Apollo");
  assert.equal(values.at(-1).__interrupt__[0].value.type, "select");

  let out = await client.runs.wait(tid, "dev", { command: { resume: { value: "green" } } });
  assert.equal(out.__interrupt__[0].value.type, "multiSelect");
  out = await client.runs.wait(tid, "dev", { command: { resume: { values: ["metrics"] } } });
  const last = out.__interrupt__[0].id;
  // A second answer to a consumed interrupt is refused.
  await assert.rejects(client.runs.wait(tid, "dev", { command: { resume: { value: "green" } } }));
  out = await client.runs.wait(tid, "dev", { command: { resume: { [last]: { approved: true } } } });
  assert.equal(out.outcome, "completed");
  assert.equal((await client.runs.join(tid, runId)).result.name, "Apollo");
  assert.equal((await client.runs.get(tid, runId)).status, "success");
  const history = await client.threads.getHistory(tid, { limit: 50 });
  assert.ok(history.length > 1);
});

test("a run cancelled from the JS client", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "dev", { input: { topic: "cancel" } });
  await client.runs.join(thread.thread_id, run.run_id);
  await client.runs.cancel(thread.thread_id, run.run_id);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});
