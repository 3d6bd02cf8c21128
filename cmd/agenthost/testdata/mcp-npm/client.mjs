// The official MCP TypeScript client drives `agenthost mcp serve` over stdio: it lists
// the tools, calls calc twice (a result and an isError result) and prints what it got as
// one JSON object. Usage: node client.mjs AGENTHOST MANIFEST
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [agenthost, manifest] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: agenthost, args: ["-c", manifest, "mcp", "serve"] });
const client = new Client({ name: "agenthost-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const ok = await client.callTool({ name: "calc", arguments: { expression: "6*7" } });
const bad = await client.callTool({ name: "calc", arguments: { expression: "1/0" } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  schema: tools.tools[0].inputSchema,
  ok: { text: ok.content[0].text, isError: !!ok.isError },
  bad: { text: bad.content[0].text, isError: !!bad.isError },
}));
await client.close();
