// Drives `agenthost serve` with the official AG-UI client (@ag-ui/client HttpAgent), which
// verifies the event sequence and validates every event against @ag-ui/core's schemas.
// Usage: node client.mjs BASE_URL TOKEN THREAD_ID
// Prints one JSON object: {runs: [{runId, events, pendingInterrupts}], messages}.
import { HttpAgent } from "@ag-ui/client";

const [base, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${base}/v1/runs`, headers: { Authorization: `Bearer ${token}` }, threadId });
const runs = [];

async function run(runId, params = {}) {
  const events = [];
  await agent.runAgent({ runId, ...params }, { onEvent: ({ event }) => { events.push(event); } });
  runs.push({ runId, events, pendingInterrupts: agent.pendingInterrupts.map((i) => i.id) });
}

agent.addMessage({ id: "u1", role: "user", content: "What is 17*23?" });
await run("run-1"); // interrupted: calc needs approval
await run("run-2", { resume: [{ interruptId: "c1", status: "resolved", payload: { approved: true } }] });
agent.addMessage({ id: "u2", role: "user", content: "And 19*29?" });
await run("run-3"); // interrupted again
await run("run-4", { resume: [{ interruptId: "c2", status: "cancelled" }] });

const messages = agent.messages.map((m) => {
  const calls = (m.toolCalls || []).map((c) => `${c.id}:${c.function.name}${c.function.arguments}`);
  return `${m.role}: ${typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")}${calls.length ? " calls " + calls.join(",") : ""}`;
});
process.stdout.write(JSON.stringify({ runs, messages }));
