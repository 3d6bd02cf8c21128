// Package audit is agenthost's audit log: an append-only, hash-chained record of what was
// done and for whom (runs started and ended, approvals decided, memories and sessions
// deleted). Each record carries the hash of the one before it, so a record changed,
// removed or inserted afterwards breaks the chain at that point, and Verify finds it. A
// log begins with its genesis record (Genesis, written by the store when it creates the
// log), so VerifyLog also finds a deleted head; a Checkpoint kept outside the database
// finds a cut tail, or a log rewritten whole (VerifyCheckpoint).
//
// It holds the record type, the chaining rule (Chain, Verify, VerifyLog), checkpoints and
// the Store interface the session stores implement (store: SQLite; store/postgres). What it must not do: import
// the loop, the host or a store, or decide what is audited: the host does, in one place
// (host/audit.go).
package audit
