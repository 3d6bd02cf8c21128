// Package a2abridge connects agenthost to other agents over A2A (the Agent2Agent
// protocol, through github.com/a2aproject/a2a-go): Executor serves an agent — each A2A
// context is an agenthost session, each task a run — and Tool lets an agent call a remote
// A2A agent as a tool.
//
// What it must not do: run an agent itself, or check who may. Executor is given the run
// function of the server (surface/server), which authorises, claims the session and runs
// through the host's one run path, so guardrails, approvals, budgets, audit and storage
// apply to A2A requests as to every other; Tool is a loop.Tool, so a call to a remote agent
// goes through the loop's one tool pipeline (schema, guardrails, permissions, approvals).
package a2abridge
