// Package store keeps agent sessions in a SQLite file: the default loop.SessionStore of
// the agenthost binary. It uses modernc.org/sqlite (pure Go, no cgo) in WAL mode, chosen over
// ncruces/go-sqlite3 by measurement (BENCHMARKS.md, "SQLite driver, round three").
//
// What it guarantees: entries are append-only and gapless per session; an Append is one
// transaction, so a process killed at any moment (SIGKILL included) leaves every session a
// prefix of what the loop wrote, never half an append; an Append whose first sequence
// number is not the next one fails, which catches two writers on one session. Runs are
// keyed by (session, run id); runs, session leases and per-plugin key/value pairs live in
// the same file.
//
// Writes (sqlitewrite.go): every write of the process goes through one connection with
// every statement it runs prepared once on it and kept (BEGIN, COMMIT and savepoints
// included: sqlitetx.go, since database/sql's Tx would prepare them again in every
// transaction), and is group-committed: writes that arrive while a commit is in progress
// share the next transaction, each in a savepoint (one that fails fails alone), and each
// caller returns once the transaction holding its write is committed. A lone write is
// committed by its own caller. A write whose caller left before its turn is skipped; one
// that has started is finished (SQLite rolls back a whole transaction when a write
// statement in it is interrupted). AppendRun (loop.RunAppender)
// saves a run record and appends in one transaction, and with a run's final record
// releases its lease there too; with the loop writing once per step (rule L21) a
// one-step run costs four commits (three steps, end) instead of ten: the run's lease is
// taken in its first write's transaction (AppendRunClaim, loop.ClaimAppender), and
// AppendRunKV sets a caller's key-value pairs there too (a workflow step's record).
// AcquireLeaseKV and ReleaseLeaseKV take a lease with a key-value pair's first write and
// give it back with its last (a workflow run's lease and record, leasekv.go);
// TakeLeaseWrite and ReleaseLeaseWrite do the same inside another session's run write
// (a workflow run's first call's claim, its last call's end).
//
// Entries are kept in append order (entriesorder.go): rowid order, with (session, seq)
// a unique index, so a write fills the table's last leaf instead of rebalancing one in
// the middle; an append's entries are one multi-row INSERT (insertrows.go). Sessions
// have a small integer key given in the order they first write (sessionkeys.go,
// migration 17): the entries' indexes and runs are keyed by it, not by the random text
// id, so a new session's rows land at the right edge of each b-tree; the text id stays
// the public one. A write reads its session's key, last seq and lease (its fence) in one
// statement. A run's start reads its claim state and its head in one statement
// (sqliteclaim.go), on the writer's connection when no write holds or awaits it (its
// cache is the file's: it made the last commit), else on a pool of its own that does
// not map the file (pointreads.go): a mapped connection that reads after another's
// commit unmaps and maps the whole file again.
//
// Schema versions: PRAGMA user_version counts the migrations applied (migrate.go). Open
// applies the missing ones in order, each in its own write transaction that re-reads the
// version, so a crash or a second process never half-migrates; a file from a newer
// agenthost is refused. Version 1 is the schema from before versioning (so such files
// migrate as if from version 0); version 2 keys runs by (session, id) and adds leases.
// A migration, once released, is never edited: add a new one.
//
// Leases (loop.Leaser): one row per session with a live run, naming its owner (pid,
// host, per-process instance id, heartbeat). AcquireLease reads and replaces the row in
// one BEGIN IMMEDIATE transaction, so two processes taking one session are ordered by
// SQLite's write lock; whether a held lease is alive is the loop's rule (loop.Lease.Alive),
// passed in. Recovery closes only runs whose session lease it could take (loop.RecoverRuns).
//
// The file deleted or replaced under the process (unavailable.go): before each commit
// the path is compared with the file opened (os.SameFile); when they differ every write
// fails with ErrDatabaseGone, logged once, instead of going to an unlinked inode that
// the next start never sees. Storage failures (that one, a full disk, an I/O error, a
// lock held past busy_timeout) are *UnavailableError, which a server answers with 503.
//
// Opening a file that is not a database, a directory, an unreadable or a damaged file
// fails in OpenSQLite with an error naming the file (PRAGMA quick_check finds pages a
// truncated file lost), so a broken store is reported once, before any run.
//
// A run starts from the session's head (loop.HeadLoader, sqlitehead.go): its messages
// and compactions, through a partial index that leaves the events (four fifths of the
// rows) unread, and the last event's seq. The heads loaded last are kept decoded
// (HeadCache, shared with store/postgres), so a chat's next turn reads only the rows
// its previous turn appended; a kept head is used only while the row at its last seq
// still holds the bytes it was read with, so a session deleted and written again by
// another process is read whole. A head not kept (a session's first run since the
// process started, by LoadHead or by the claim's one statement) is read from the
// session's transcript projection (transcript.go): its messages and compactions stored
// again in chunks that decode without JSON, a prefix that lags the entries by fewer than
// lagMin of them (extended in the transaction of the write that reaches it; the rows
// after it are read from the entries), dropped with them (triggers), checked at each
// read and rebuilt from the entries when absent or different.
//
// Reads use memory-mapped I/O (mmap_size, up to 1 GiB of the file): a vector search reads
// thousands of rows scattered over the file (vectorindex.go), and a read call per page
// cost more CPU than the search itself (88 against 56 ms a search at 100,000 memories).
// The file is only ever grown or checkpointed by SQLite itself; a file truncated under the
// process by something else is refused at the next open (checkNotTruncated).
//
// Stores kept by a database server are drivers (driver.go): store/postgres registers
// "postgres" when a program imports it, and OpenDriver opens a registered kind, so this
// package, and the host, link no server's client.
//
// What it must not do: interpret entries (it stores the JSON the loop types encode to and
// decodes it back, checking only that the body matches its row), decide whether a lease
// is alive, or know about plugins beyond the name that scopes their KV.
package store
