// Package server is `agenthost serve`: an HTTP API that runs the agent and streams each
// run as AG-UI events over Server-Sent Events, with approvals as AG-UI interrupts,
// abort, session listing, bearer-token auth and a small live page at "/".
//
//	POST /v1/runs               AG-UI RunAgentInput → text/event-stream of AG-UI events
//	POST /v1/sessions/{id}/runs/{run}/abort  stop a run in progress (the session keeps what it stored)
//	POST /v1/runs/{run}/abort   the same, when only one session has that run id in progress (else 409)
//	GET  /v1/sessions           stored sessions
//	GET  /v1/sessions/{id}      one session's entries and runs, as JSON
//	POST /v1/sessions/{id}/fork, GET /v1/sessions/{id}/diff/{other}  fork a session; compare two (fork.go)
//	GET  /v1/sessions/{id}/fixture[?id=NAME]  the last run as a replay fixture, a zip (fixture.go)
//	GET  /v1/sessions/{id}/attachments/{ref}  a stored media part's bytes (media.go)
//	POST /v1/sessions/{id}/runs/{run}/feedback  {score, comment} on a stored run (feedback.go)
//	GET  /v1/insights[?since=7d] the stored runs summed up (insights, insights.go)
//	POST /v1/workflows/{name}/runs  run or resume a declared workflow, streamed as AG-UI (workflows.go)
//	GET  /v1/workflows             the declared workflows and their steps (workflowviews.go)
//	GET  /v1/workflows/{name}/runs[/{id}]  stored runs; one run's record
//	GET  /healthz               liveness, no auth
//	GET  /readyz                readiness: 503 while draining (lifecycle.go) or when Options.Ready fails, no auth
//	GET  /                      the live page (web/index.html, embedded)
//
// The loop's events are translated by the translator (translate.go); the mapping is in
// README.md. A run is bound to its request: a client that disconnects aborts its run.
// A second run on a session that has one in progress is refused with 409. Every request
// first passes the browser guard (guard.go): Host, Origin and JSON-only POST, so that no
// web page can drive a server on loopback.
//
// The package depends on a Runner (the loop agent) and a loop.SessionStore, so tests can
// serve an in-process agent. It must not hold loop logic (when to call tools, how to
// store) or know about manifests, Wasm or providers: host.Open builds the agent, this
// package only speaks HTTP about it. Nor does it decide who may act on what: every route
// on a stored object and every run asks the host's door (Options.Door, door.go) and maps
// its answer to HTTP.
package server
