// Package store keeps agent sessions in a SQLite file: the default loop.SessionStore of
// the agenthost binary. It uses modernc.org/sqlite (pure Go, no cgo) in WAL mode.
//
// What it guarantees: entries are append-only and gapless per session; an Append is one
// transaction, so a process killed at any moment (SIGKILL included) leaves every session a
// prefix of what the loop wrote, never half an append; an Append whose first sequence
// number is not the next one fails, which catches two writers on one session. Runs and
// per-plugin key/value pairs live in the same file.
//
// What it must not do: interpret entries (it stores the JSON the loop types encode to and
// decodes it back), or know about plugins beyond the name that scopes their KV.
package store
