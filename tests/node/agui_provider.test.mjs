// The official AG-UI client (@ag-ui/client HttpAgent) on the `assistant` agent with a real
// provider client (the suite's fake OpenAI-compatible server): a provider blip inside an
// AG-UI run, a stream cut mid-answer and retried, and a cancel while the model call hangs.
// Started by
// tests/providers/test_official_client.py, which sets the provider's fault first
// (AGENTSITE_CASE names the case) and checks the server side afterwards.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { HttpAgent } from "@ag-ui/client";

const BASE = process.env.AGENTSITE_URL;
const TOKEN = process.env.AGENTSITE_TOKEN;
const CASE = process.env.AGENTSITE_CASE;
assert.ok(BASE && TOKEN && CASE, "AGENTSITE_URL, AGENTSITE_TOKEN and AGENTSITE_CASE must be set");

const complaints = [];
console.warn = (...args) => complaints.push(["warn", ...args]);
console.error = (...args) => complaints.push(["error", ...args]);

function makeAgent() {
  return new HttpAgent({
    url: `${BASE}/agui/assistant/`,
    headers: { Authorization: `Token ${TOKEN}` },
    threadId: randomUUID(),
  });
}

function watcher() {
  const seen = { errors: [], finished: [], types: [], custom: [] };
  return {
    seen,
    subscriber: {
      onEvent: ({ event }) => { seen.types.push(event.type); },
      onCustomEvent: ({ event }) => { seen.custom.push(event); },
      onRunFinishedEvent: ({ event }) => { seen.finished.push(event); },
      onRunErrorEvent: ({ event }) => { seen.errors.push(event); },
    },
  };
}

const question = () => [{ id: randomUUID(), role: "user", content: "what is the refund policy?" }];

test("a provider blip inside an AG-UI run: the retry is announced and the run goes on",
  { skip: CASE !== "blip" }, async () => {
    const agent = makeAgent();
    const { seen, subscriber } = watcher();
    await agent.runAgent({ messages: question() }, subscriber);
    assert.deepEqual(seen.errors, []);
    assert.equal(seen.types.filter((t) => t === "RUN_STARTED").length, 1, "one AG-UI run");
    assert.equal(seen.types.at(-1), "RUN_FINISHED");
    assert.equal(seen.finished.at(-1).outcome?.type ?? "success", "success");
    const [retrying] = seen.custom.filter((e) => e.name === "agentsite.retrying");
    assert.ok(retrying, `no agentsite.retrying event in ${seen.types}`);
    assert.equal(retrying.value.attempt, 1);
    assert.match(retrying.value.reason, /rate-limiting/);
    assert.ok(retrying.value.of >= 1 && retrying.value.retryAt);
    const text = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
    assert.ok(text.length > 0, "the answer reached the client");
    assert.deepEqual(complaints, []);
  });

test("a stream cut mid-answer and retried: the client holds the answer once, not its cut-off part twice",
  { skip: CASE !== "cut" }, async () => {
    const agent = makeAgent();
    const { seen, subscriber } = watcher();
    // The client's assistant text as each event arrives (before the client applies it).
    const shown = [];
    const onEvent = subscriber.onEvent;
    subscriber.onEvent = (params) => {
      onEvent(params);
      shown.push(params.messages.filter((m) => m.role === "assistant")
        .map((m) => m.content ?? "").join(""));
    };
    await agent.runAgent({ messages: question() }, subscriber);
    assert.deepEqual(seen.errors, []);
    assert.equal(seen.types.filter((t) => t === "RUN_STARTED").length, 1, "one AG-UI run");
    assert.equal(seen.types.at(-1), "RUN_FINISHED");
    const text = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
    assert.ok(text.length > 0, "the answer reached the client");
    // Just before the segment's final MESSAGES_SNAPSHOT (which restates everything), the
    // client already held the answer as it ends: the retried stream replaced the cut-off part.
    assert.equal(shown[seen.types.lastIndexOf("MESSAGES_SNAPSHOT")], text);
    assert.deepEqual(complaints, []);
  });

test("a cancel while the model call hangs ends the AG-UI run at once, as cancelled",
  { skip: CASE !== "cancel" }, async () => {
    // The test's Python side cancels the run over REST once the model call hangs.
    const agent = makeAgent();
    const { seen, subscriber } = watcher();
    await agent.runAgent({ messages: question() }, subscriber);
    assert.deepEqual(seen.errors, []);
    assert.equal(seen.types.filter((t) => t === "RUN_STARTED").length, 1, "one AG-UI run");
    assert.equal(seen.types.at(-1), "RUN_FINISHED");
    assert.equal(seen.finished.at(-1).outcome.type, "cancelled");
    assert.deepEqual(complaints, []);
  });
