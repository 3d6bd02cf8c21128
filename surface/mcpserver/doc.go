// Package mcpserver serves a host's sandboxed tools to MCP clients (Claude Desktop,
// Cursor, any client of the Model Context Protocol) with the official Go SDK: `agenthost
// mcp serve` over stdio, or Streamable HTTP behind the same Host, Origin and token rules
// as `agenthost serve`.
//
// Each tool runs in the sandbox with its plugin's permissions, after the same argument
// check a run applies; a plugin's failure or refused arguments are isError results, and
// what a plugin logs or reports as progress during a call goes to the client that made
// it as MCP notifications, as do the pieces of a result a tool streams (progress
// notifications carrying each piece in _meta["agenthost/result_delta"], to a client that
// sent a progressToken). The run ask_NAME starts is forwarded to such a client the same
// way: its tool calls as steps of progress, its model's text as result pieces
// (forwarder.runEvent).
//
// It must not run the agent loop or a workflow itself: the agent (ask_NAME) and the
// declared workflows (workflow_NAME) it offers run through the host's Runner and
// workflow engine, the same paths as every other surface.
package mcpserver
