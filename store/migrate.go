package store

import (
	"context"
	"database/sql"
	"fmt"
)

// The schema is versioned with SQLite's PRAGMA user_version: migrations[i] brings a
// database from version i to version i+1. Each runs in its own write transaction that
// re-reads the version first, so a crash leaves a database at a version boundary and
// two processes opening an old file at once migrate it once. Append only: a released
// migration is never edited, because files made by older binaries go through it.
var migrations = []func(ctx context.Context, tx *sql.Tx) error{
	migrateV1Base,
	migrateV2RunsPerSession,
	migrateV3Feedback,
	migrateV4Memory,
	migrateV5Audit,
	migrateV6Access,
	migrateV7MemoryTerms,
	migrateV8MemoryVectors,
	migrateV9VectorModels,
	migrateV10AuditGenesis,
	migrateV11UserIDs,
	migrateV12TranscriptIndex,
	migrateV13VectorIndex,
	migrateV14ToolCache,
	migrateV15Attachments,
	migrateV16EntriesInAppendOrder,
	migrateV17SessionKeys,
	migrateTranscripts,
	migrateV19RunNotes,
}

// schemaVersion is the version this code writes.
var schemaVersion = len(migrations)

// migrateV1Base is the schema as it was before versioning (user_version 0). IF NOT
// EXISTS makes it a no-op on such a file and creates a new file.
func migrateV1Base(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS entries (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	run_id  TEXT    NOT NULL,
	time    TEXT    NOT NULL,
	kind    TEXT    NOT NULL,
	body    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
	id      TEXT PRIMARY KEY,
	session TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	usage   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session, started);
CREATE TABLE IF NOT EXISTS kv (
	plugin TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  BLOB NOT NULL,
	PRIMARY KEY (plugin, key)
) WITHOUT ROWID;`)
	return err
}

// migrateV2RunsPerSession keys runs by (session, id): run ids were global, so reusing
// one on another session overwrote the first session's record. It also adds the leases
// table (one owner per session while a run is live, see loop.Leaser).
func migrateV2RunsPerSession(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE runs_v2 (
	session TEXT NOT NULL,
	id      TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	usage   TEXT NOT NULL,
	PRIMARY KEY (session, id)
) WITHOUT ROWID;
INSERT INTO runs_v2 (session, id, status, reason, started, ended, usage)
	SELECT session, id, status, reason, started, ended, usage FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_by_session ON runs (session, started);
CREATE TABLE leases (
	session   TEXT PRIMARY KEY,
	run_id    TEXT    NOT NULL,
	pid       INTEGER NOT NULL,
	host      TEXT    NOT NULL,
	instance  TEXT    NOT NULL,
	heartbeat TEXT    NOT NULL
) WITHOUT ROWID;`)
	return err
}

// migrate brings the database to schemaVersion. A file from a newer agenthost is
// refused rather than written with an older idea of its tables.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		done, err := migrateOne(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

func migrateOne(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return false, err
	}
	switch {
	case v == schemaVersion:
		return true, nil
	case v > schemaVersion || v < 0:
		return false, fmt.Errorf("schema version %d is newer than this agenthost knows (%d): use a newer agenthost", v, schemaVersion)
	}
	if err := migrations[v](ctx, tx); err != nil {
		return false, fmt.Errorf("migrate schema %d → %d: %w", v, v+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
		return false, fmt.Errorf("migrate schema %d → %d: %w", v, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate schema %d → %d: %w", v, v+1, err)
	}
	return false, nil
}

// migrateV3Feedback adds feedback on runs (loop.FeedbackStore, feedback.go).
func migrateV3Feedback(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE feedback (
	id      INTEGER PRIMARY KEY,
	session TEXT    NOT NULL,
	run_id  TEXT    NOT NULL,
	agent   TEXT    NOT NULL,
	score   INTEGER NOT NULL,
	comment TEXT    NOT NULL,
	time    TEXT    NOT NULL
);
CREATE INDEX feedback_by_time ON feedback (time);`)
	return err
}

// migrateV4Memory adds long-term memory (memory.Store, memory.go): a table and its FTS5
// index, kept in step by triggers so that no writer can forget the index. The index has
// a second column, scope: one token naming the entry's (user, agent) pair (memory.go,
// scopeToken), so a search matches only the scopes the user may see inside the index
// and ranks only their entries, however many other users' memories the file holds.
// The index deletes securely (FTS5 secure-delete): a forgotten or erased memory's words
// leave the index's pages, not only its results.
func migrateV4Memory(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE memories (
	rowid    INTEGER PRIMARY KEY,
	id       TEXT NOT NULL UNIQUE,
	owner    TEXT NOT NULL,
	agent    TEXT NOT NULL,
	scope    TEXT NOT NULL,
	kind     TEXT NOT NULL,
	text     TEXT NOT NULL,
	metadata TEXT NOT NULL,
	session  TEXT NOT NULL,
	run_id   TEXT NOT NULL,
	created  TEXT NOT NULL,
	updated  TEXT NOT NULL
);
CREATE INDEX memories_by_owner ON memories (owner, agent, updated);
CREATE VIRTUAL TABLE memories_fts USING fts5(text, scope, content='memories', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts(rowid, text, scope) VALUES (new.rowid, new.text, new.scope);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts(memories_fts, rowid, text, scope) VALUES ('delete', old.rowid, old.text, old.scope);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
	INSERT INTO memories_fts(memories_fts, rowid, text, scope) VALUES ('delete', old.rowid, old.text, old.scope);
	INSERT INTO memories_fts(rowid, text, scope) VALUES (new.rowid, new.text, new.scope);
END;`)
	return err
}

// migrateV5Audit adds the audit log (audit.Store, audit.go): seq is the chain's order.
func migrateV5Audit(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE audit (
	seq    INTEGER PRIMARY KEY,
	time   TEXT NOT NULL,
	action TEXT NOT NULL,
	actor  TEXT NOT NULL,
	target TEXT NOT NULL,
	detail TEXT NOT NULL,
	prev   TEXT NOT NULL,
	hash   TEXT NOT NULL
);`)
	return err
}

// migrateV6Access adds users (with the sha256 of their token, never the token), session
// owners and shares (package access).
func migrateV6Access(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE users (
	name       TEXT PRIMARY KEY,
	role       TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	created    TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE session_owners (
	session TEXT PRIMARY KEY,
	owner   TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE shares (
	session TEXT NOT NULL,
	user    TEXT NOT NULL,
	role    TEXT NOT NULL,
	by      TEXT NOT NULL,
	created TEXT NOT NULL,
	PRIMARY KEY (session, user)
) WITHOUT ROWID;
CREATE INDEX shares_by_user ON shares (user, session);`)
	return err
}

// migrateV7MemoryTerms indexes memories from a column of their own, terms, instead of
// their text: an encrypted store keeps the text sealed and indexes keyed hashes of its
// words there (store/seal); a store without keys keeps the text in both.
func migrateV7MemoryTerms(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE memories ADD COLUMN terms TEXT NOT NULL DEFAULT '';
UPDATE memories SET terms = text;
DROP TRIGGER memories_ai;
DROP TRIGGER memories_ad;
DROP TRIGGER memories_au;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5(terms, scope, content='memories', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts(rowid, terms, scope) VALUES (new.rowid, new.terms, new.scope);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts(memories_fts, rowid, terms, scope) VALUES ('delete', old.rowid, old.terms, old.scope);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
	INSERT INTO memories_fts(memories_fts, rowid, terms, scope) VALUES ('delete', old.rowid, old.terms, old.scope);
	INSERT INTO memories_fts(rowid, terms, scope) VALUES (new.rowid, new.terms, new.scope);
END;`)
	return err
}

// migrateV8MemoryVectors adds each memory's embedding (memory.EncodeVector; sealed with
// keys), NULL where none was computed.
func migrateV8MemoryVectors(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE memories ADD COLUMN vector BLOB`)
	return err
}

// migrateV9VectorModels records which embedding model made each vector (empty for those
// stored before), so that `memory reindex` finds the vectors of another model; and makes
// the index follow changes of a memory's terms and scope only, so storing a vector does
// not re-index its words.
func migrateV9VectorModels(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE memories ADD COLUMN vector_model TEXT NOT NULL DEFAULT '';
DROP TRIGGER memories_au;
CREATE TRIGGER memories_au AFTER UPDATE OF terms, scope ON memories BEGIN
	INSERT INTO memories_fts(memories_fts, rowid, terms, scope) VALUES ('delete', old.rowid, old.terms, old.scope);
	INSERT INTO memories_fts(rowid, terms, scope) VALUES (new.rowid, new.terms, new.scope);
END;`)
	return err
}

// migrateV10AuditGenesis begins the audit log with its genesis record when it is empty
// (a new file, or one nothing was audited in), and allows one genesis record only. A log
// begun before keeps its records and has none (audit.VerifyLog: legacy).
func migrateV10AuditGenesis(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `CREATE UNIQUE INDEX audit_one_genesis ON audit (action) WHERE action = 'audit.genesis'`); err != nil {
		return err
	}
	return writeGenesis(ctx, tx)
}

// migrateV13VectorIndex adds the vector index (vectorindex.go): each memory's list (NULL
// until a build gives it one), indexed with its scope, and each scope's centroids.
func migrateV13VectorIndex(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE memories ADD COLUMN list INTEGER;
CREATE INDEX memories_by_list ON memories (owner, agent, list);
CREATE TABLE memory_index (
	owner     TEXT    NOT NULL,
	agent     TEXT    NOT NULL,
	lo        INTEGER NOT NULL,
	hi        INTEGER NOT NULL,
	trained   INTEGER NOT NULL,
	vectors   INTEGER NOT NULL,
	dims      INTEGER NOT NULL,
	centroids BLOB    NOT NULL,
	PRIMARY KEY (owner, agent)
);`)
	return err
}
