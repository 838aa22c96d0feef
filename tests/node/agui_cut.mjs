// One AG-UI connect with the official client (@ag-ui/client HttpAgent), for
// tests/edge/test_edge_agui_cut.py: prints "EVENT <type>" per event as it comes, then one
// "RESULT <json>" line: did the client report a failure, did the run finish.
// AGENTSITE_URL, AGENTSITE_TOKEN and THREAD_ID (a thread of the `dev` agent) set.
import { HttpAgent } from "@ag-ui/client";

const { AGENTSITE_URL: BASE, AGENTSITE_TOKEN: TOKEN, THREAD_ID: threadId } = process.env;
const agent = new HttpAgent({
  url: `${BASE}/agui/dev/connect/`,
  headers: { Authorization: `Token ${TOKEN}` },
  threadId,
});
const seen = { failed: [], runErrors: [], finished: 0, types: [] };
try {
  await agent.runAgent({}, {
    onEvent: ({ event }) => {
      seen.types.push(event.type);
      console.log(`EVENT ${event.type}`);
    },
    onRunErrorEvent: ({ event }) => { seen.runErrors.push(event.message); },
    onRunFinishedEvent: () => { seen.finished += 1; },
    onRunFailed: ({ error }) => { seen.failed.push(String(error)); },
  });
} catch (error) {
  seen.thrown = String(error);
}
console.log(`RESULT ${JSON.stringify(seen)}`);
