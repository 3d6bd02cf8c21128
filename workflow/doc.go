// Package workflow runs declared workflows ([workflows.NAME] in agent.toml,
// docs/workflows.md): a DAG of tool, agent (prompt) and approval steps with
// dependencies, CEL conditions (github.com/google/cel-go), fan-out over lists, retries
// and timeouts. Compile checks a definition (cycles, unknown steps, expressions that do
// not compile) and names the offending key; Engine runs one, independent steps in
// parallel up to a bound, and keeps each step's start, output and end in the session
// store, so a run killed at any point continues without repeating a finished step.
//
// It must NOT call a tool or a model itself: every tool step goes through the
// Executor the caller gives (the host's one tool pipeline, loop.Agent.DirectCall, rule
// L22), every agent step through the caller's run path. It imports loop only, never
// host, cmd or surface/server: the host wires it, the surfaces present it.
package workflow
