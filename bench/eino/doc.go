// Package eino compares agenthost's loop with cloudwego/eino's ReAct agent on the same
// one-step run, in one test binary: BenchmarkReAct/agenthost and BenchmarkReAct/eino-*.
// It is a module of its own (go.mod, replace ../..) so agenthost does not depend on eino.
//
// What is equal on both sides: the model (answers a user message with one "add" tool
// call, a tool result with the final text "5"; zero latency; decides from the request
// alone), the tool body (fake.Add: decode {"a":2,"b":3}, add, format), the input (a system
// and a user message) and the unit (one op = one run = two model calls + one tool call).
// eino runs flow/agent/react, its ReAct agent (a compiled graph of a ChatModel node and a
// ToolsNode with a branch), built once like agenthost's Agent. Differences, all in eino's
// favour: agenthost validates the tool arguments against the JSON Schema, emits 18
// events and hands every entry to a store (one that keeps nothing); eino runs without
// callbacks. eino-stream consumes the same three-chunk stream as agenthost (content,
// usage, finish); eino-generate gets each answer whole from Generate.
package eino
