// Drives agenthost's A2A server with the official A2A JavaScript client (@a2a-js/sdk).
// Usage: node client.mjs BASE_URL TOKEN MODE, MODE one of
//   jsonrpc  the client's defaults: it reads the card and picks A2A 1.0 over JSON-RPC
//   rest     the defaults, preferring the HTTP+JSON binding (A2A 1.0)
//   v0.3     the client's 0.3 (legacy) mode, given the card as a 0.3 client reads it
//            (without 1.0's supportedInterfaces: url, preferredTransport, ...)
// It streams one question, then asks one that needs an approval, approves it in the same
// task and reads the task back; it prints what it saw as JSON for the Go test to check.
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver,
  JsonRpcTransportFactory, RestTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, taskStateToJSON } from "@a2a-js/sdk";

const [base, token, mode] = process.argv.slice(2);
const auth = token ? { serviceParameters: { Authorization: "Bearer " + token } } : undefined;

async function client() {
  if (mode === "jsonrpc") return new ClientFactory().createFromUrl(base);
  if (mode === "rest") {
    return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default,
      { preferredTransports: ["HTTP+JSON"] })).createFromUrl(base);
  }
  const legacy = { legacyCompat: { enabled: true } };
  const card = await (await fetch(base + "/.well-known/agent-card.json")).json();
  delete card.supportedInterfaces; // what a 0.3 client knows of the card
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory(legacy), new RestTransportFactory(legacy)],
    cardResolver: new DefaultAgentCardResolver(legacy),
  });
  return factory.createFromAgentCard(card);
}

const text = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const message = (t, extra = {}) => ({
  message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: t } }], ...extra },
});
const taskView = (t) => ({
  state: taskStateToJSON(t.status.state),
  status: text(t.status.message?.parts),
  artifacts: (t.artifacts ?? []).map((a) => ({ name: a.name, text: text(a.parts) })),
});

const c = await client();
const out = { protocol: c.transport.protocolName, version: c.transport.protocolVersion, stream: [] };

// 1. A streamed answer: every event as the client got it.
for await (const ev of c.sendMessageStream(message("What is the capital of France?"), auth)) {
  const p = ev.payload;
  switch (p?.$case) {
    case "task": out.stream.push(`task ${taskStateToJSON(p.value.status.state)}`); break;
    case "statusUpdate":
      out.stream.push(`status ${taskStateToJSON(p.value.status.state)} ${JSON.stringify(text(p.value.status.message?.parts))}`);
      break;
    case "artifactUpdate": {
      const a = p.value;
      out.stream.push(`artifact ${a.artifact.name}${a.append ? " append" : ""}${a.lastChunk ? " last" : ""} ${JSON.stringify(text(a.artifact.parts))}`);
      break;
    }
    default: out.stream.push(`other ${JSON.stringify(ev)}`);
  }
}

// 2. A question whose tool call waits for an approval, answered in the same task.
const asked = await c.sendMessage(message("What is 17*23?"), auth);
out.asked = taskView(asked);
const done = await c.sendMessage(message("approve", { taskId: asked.id, contextId: asked.contextId }), auth);
out.approved = taskView(done);
out.got = taskView(await c.getTask({ id: asked.id }, auth));
process.stdout.write(JSON.stringify(out));
