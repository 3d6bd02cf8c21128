// Drives POST /v1/workflows/NAME/runs with the official AG-UI client (@ag-ui/client
// HttpAgent), which verifies the event sequence and validates every event.
// Usage: node workflow.mjs BASE_URL TOKEN WORKFLOW
// Prints {runs: [{runId, events, pendingInterrupts}]}.
import { HttpAgent } from "@ag-ui/client";

const [base, token, name] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${base}/v1/workflows/${name}/runs`, headers: { Authorization: `Bearer ${token}` }, threadId: `workflow:${name}` });
const runs = [];

async function run(runId, params = {}) {
  const events = [];
  await agent.runAgent({ runId, ...params }, { onEvent: ({ event }) => { events.push(event); } });
  runs.push({ runId, events, pendingInterrupts: agent.pendingInterrupts.map((i) => i.id) });
}

await run("w1", { forwardedProps: { input: { n: 21 } } }); // stops at the approval step
await run("w1", { resume: [{ interruptId: "ok", status: "resolved", payload: { approved: true } }] });
process.stdout.write(JSON.stringify({ runs }));
