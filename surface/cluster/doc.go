// Package cluster runs agent runs as durable jobs on River (github.com/riverqueue/river),
// in the PostgreSQL database that holds the sessions, so that any node accepts a run,
// any worker node executes it, and a run whose worker dies is picked up by another.
//
// A run is one River job (kind agenthost_run) carrying its ids and its loop.RunInput,
// sealed with the store's keys and dropped from the job once it ends (atrest.go). A worker
// executes it with the host's agent; the loop stores every entry as it goes, so a job
// retried after its worker died (River rescues a job that has been running too long)
// continues the session under a new run id with no new input, and the loop's own rule
// (L14) executes only the tool calls whose results were not stored. Cancellation is
// River's: an abort cancels the job, and River cancels its context on whichever node
// runs it. Whether a run is live is the store's to say, not the job state's (ended.go):
// an attempt of a run whose end is stored completes its job without touching the
// session, and an abort does not reach a run that ended.
//
// It must not hold a run's state itself (the store does), queue work anywhere but River,
// or leave a payload in clear in River's table when the store seals.
package cluster
