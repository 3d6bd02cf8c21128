// Package postgres is a loop.SessionStore in PostgreSQL (pgx): the same contract as the
// SQLite store — append-only, gapless sessions, runs keyed by session, plugin KV, run
// leases — for several agenthost processes that share one database.
//
// Importing the package registers it as the store.Driver of [store] kind = "postgres"
// (driver.go); cmd/agenthost does.
//
// It must not hold a transaction across a model or tool call: every method is one short
// transaction. Appends and leases on a session are ordered by a transaction-scoped
// advisory lock on the session, so two processes appending to one session, or taking
// its lease, never interleave.
//
// It must not run a statement around its door (door.go): the pool, and the
// transactions, rows and row it hands out, mark every error that says the database is
// unreachable (StoreUnavailable), so no call site marks by hand (door_test.go).
//
// Like the SQLite store it keeps a projection of each session's transcript
// (transcript.go), written in the entries' transaction and never trusted over them: a
// read checks it against the entries and rebuilds it from them.
package postgres
