// Package mcpclient gives an agent the tools of existing MCP servers ([[mcp_servers]] in
// agent.toml), through the official Go SDK: a server started as a command (stdio) or
// reached at a URL (Streamable HTTP). A server's tools become loop.Tools; a server that
// crashes is started again, and the call in flight gets an error result.
//
// These servers are NOT sandboxed: a command runs with the user's rights, outside the
// Wasm sandbox, with only the environment variables its entry names. The manifest opts
// in to each; README.md and `agenthost plugins list` say so.
//
// It must not import host: host wires it.
package mcpclient
