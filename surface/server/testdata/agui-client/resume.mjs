// Resumes a client-tool interrupt with the official AG-UI client (@ag-ui/client HttpAgent),
// as a front end does: one answer calls a server tool (calc, run by the server, its
// TOOL_CALL_RESULT kept by the client as a tool message) and the client's own tool
// (confirm); the client adds its answer to confirm and runs again. HttpAgent sends its
// whole conversation, the echo of calc's result included.
// Usage: node resume.mjs BASE_URL TOKEN THREAD_ID
// Prints one JSON object: {runs: [{runId, events, input}], messages}.
import { HttpAgent } from "@ag-ui/client";

const [base, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${base}/v1/runs`, headers: { Authorization: `Bearer ${token}` }, threadId });
const tools = [{ name: "confirm", description: "Ask the user to confirm.", parameters: { type: "object", properties: {} } }];
const runs = [];

async function run(runId) {
  const events = [];
  const input = agent.messages.map((m) => `${m.role}:${m.toolCallId ?? m.id}`); // what HttpAgent sends
  await agent.runAgent({ runId, tools }, { onEvent: ({ event }) => { events.push(event); } });
  runs.push({ runId, events, input });
}

agent.addMessage({ id: "u1", role: "user", content: "What is 6*7? Confirm it with me." });
await run("run-1"); // calc runs, confirm is the client's: interrupted
agent.addMessage({ id: "t-c2", role: "tool", toolCallId: "c2", content: "confirmed" });
await run("run-2");

const messages = agent.messages.map((m) => {
  const calls = (m.toolCalls || []).map((c) => `${c.id}:${c.function.name}`);
  return `${m.role}${m.toolCallId ? "(" + m.toolCallId + ")" : ""}: ${typeof m.content === "string" ? m.content : ""}${calls.length ? " calls " + calls.join(",") : ""}`;
});
process.stdout.write(JSON.stringify({ runs, messages }));
