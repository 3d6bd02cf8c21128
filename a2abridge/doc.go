// Package a2abridge connects agenthost to other agents over A2A (the Agent2Agent
// protocol, 1.0 and 0.3, through github.com/a2aproject/a2a-go/v2 and its a2acompat/a2av0):
// Executor serves an agent — each A2A context is an agenthost session, each task a run,
// the answer's text streamed as artifact deltas — Tasks keeps the tasks, each reachable
// only by who may act on its session, and Tool lets an agent call a remote A2A agent (1.0,
// or 0.3) as a tool.
//
// What it must not do: run an agent itself, or check who may. Executor is given the run
// function of the server (surface/server), which authorises, claims the session and runs
// through the host's one run path, so guardrails, approvals, budgets, audit and storage
// apply to A2A requests as to every other; Tool is a loop.Tool, so a call to a remote agent
// goes through the loop's one tool pipeline (schema, guardrails, permissions, approvals).
package a2abridge
