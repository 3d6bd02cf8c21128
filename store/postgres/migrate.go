package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The schema is versioned like the SQLite store's: migrations[i] brings a database from
// version i to i+1, each in its own transaction that re-reads the version under an
// advisory lock, so several processes starting at once migrate once. Append only.
// Version 1 is the SQLite store's current shape (entries, runs keyed by session, kv,
// leases) in PostgreSQL types.
var migrations = []string{`
CREATE TABLE entries (
	session TEXT        NOT NULL,
	seq     BIGINT      NOT NULL,
	run_id  TEXT        NOT NULL,
	time    TIMESTAMPTZ NOT NULL,
	kind    TEXT        NOT NULL,
	body    JSONB       NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE TABLE runs (
	session TEXT NOT NULL,
	id      TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TIMESTAMPTZ,
	ended   TIMESTAMPTZ,
	usage   JSONB NOT NULL,
	PRIMARY KEY (session, id)
);
CREATE INDEX runs_by_session ON runs (session, started);
CREATE TABLE kv (
	plugin TEXT  NOT NULL,
	key    TEXT  NOT NULL,
	value  BYTEA NOT NULL,
	PRIMARY KEY (plugin, key)
);
CREATE TABLE leases (
	session   TEXT PRIMARY KEY,
	run_id    TEXT        NOT NULL,
	pid       INTEGER     NOT NULL,
	host      TEXT        NOT NULL,
	instance  TEXT        NOT NULL,
	heartbeat TIMESTAMPTZ NOT NULL
);`, `
CREATE TABLE feedback (
	id      BIGSERIAL PRIMARY KEY,
	session TEXT        NOT NULL,
	run_id  TEXT        NOT NULL,
	agent   TEXT        NOT NULL,
	score   INTEGER     NOT NULL,
	comment TEXT        NOT NULL,
	time    TIMESTAMPTZ NOT NULL
);
CREATE INDEX feedback_by_time ON feedback (time);`, `
CREATE TABLE memories (
	id       TEXT PRIMARY KEY,
	owner    TEXT        NOT NULL,
	agent    TEXT        NOT NULL,
	kind     TEXT        NOT NULL,
	text     TEXT        NOT NULL,
	metadata JSONB       NOT NULL,
	session  TEXT        NOT NULL,
	run_id   TEXT        NOT NULL,
	created  TIMESTAMPTZ NOT NULL,
	updated  TIMESTAMPTZ NOT NULL,
	tsv      TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
);
CREATE INDEX memories_by_owner ON memories (owner, agent, updated);
CREATE INDEX memories_tsv ON memories USING GIN (tsv);`, `
CREATE TABLE audit (
	seq    BIGINT PRIMARY KEY,
	time   TIMESTAMPTZ NOT NULL,
	action TEXT        NOT NULL,
	actor  TEXT        NOT NULL,
	target TEXT        NOT NULL,
	detail JSONB       NOT NULL,
	prev   TEXT        NOT NULL,
	hash   TEXT        NOT NULL
);`, `
CREATE TABLE users (
	name       TEXT PRIMARY KEY,
	role       TEXT        NOT NULL,
	token_hash TEXT        NOT NULL UNIQUE,
	created    TIMESTAMPTZ NOT NULL
);
CREATE TABLE session_owners (
	session TEXT PRIMARY KEY,
	owner   TEXT NOT NULL
);
CREATE TABLE shares (
	session TEXT        NOT NULL,
	grantee TEXT        NOT NULL,
	role    TEXT        NOT NULL,
	by_user TEXT        NOT NULL,
	created TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (session, grantee)
);
CREATE INDEX shares_by_grantee ON shares (grantee, session);`, `
ALTER TABLE memories ADD COLUMN terms TEXT NOT NULL DEFAULT '';
UPDATE memories SET terms = text;
ALTER TABLE memories DROP COLUMN tsv;
ALTER TABLE memories ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED;
CREATE INDEX memories_tsv ON memories USING GIN (tsv);`, `
ALTER TABLE memories ADD COLUMN vector BYTEA;`, `
ALTER TABLE memories ADD COLUMN vector_model TEXT NOT NULL DEFAULT '';`, migrateAuditGenesis,
	// Users get immutable ids (access.NewUserID's shape: "u_" and 128 random bits in hex,
	// here from gen_random_uuid's 122), and owners, shares and memories that named a
	// present user by name name their id. Other names (CLI labels, removed users) stay:
	// they name no account. The audit log is never rewritten.
	`
ALTER TABLE users ADD COLUMN id TEXT NOT NULL DEFAULT '';
UPDATE users SET id = 'u_' || replace(gen_random_uuid()::text, '-', '');
CREATE UNIQUE INDEX users_by_id ON users (id);
UPDATE session_owners o SET owner = u.id FROM users u WHERE o.owner = u.name;
UPDATE shares s SET grantee = u.id FROM users u WHERE s.grantee = u.name;
UPDATE shares s SET by_user = u.id FROM users u WHERE s.by_user = u.name;
UPDATE memories m SET owner = u.id FROM users u WHERE m.owner = u.name;`,
	// The rows of a session's transcript (messages and compactions, a fifth of its
	// entries), so a run's start reads them without stepping over the events (LoadHead).
	`
CREATE INDEX entries_transcript ON entries (session, seq) WHERE kind <> 'event';`,
	// The vector index (store/vectorindex.go): each memory's list, indexed with its scope,
	// and each scope's centroids.
	`
ALTER TABLE memories ADD COLUMN list BIGINT;
CREATE INDEX memories_by_list ON memories (owner, agent, list);
CREATE TABLE memory_index (
	owner     TEXT    NOT NULL,
	agent     TEXT    NOT NULL,
	lo        BIGINT  NOT NULL,
	hi        BIGINT  NOT NULL,
	trained   INTEGER NOT NULL,
	vectors   INTEGER NOT NULL,
	dims      INTEGER NOT NULL,
	centroids BYTEA   NOT NULL,
	PRIMARY KEY (owner, agent)
);`,
	// The tool-result cache (toolcache.go), shared by every node on the database.
	`
CREATE TABLE tool_cache (
	key     TEXT   PRIMARY KEY,
	user_id TEXT   NOT NULL,
	session TEXT   NOT NULL,
	tool    TEXT   NOT NULL,
	value   BYTEA  NOT NULL,
	stored  BIGINT NOT NULL,
	expires BIGINT NOT NULL
);
CREATE INDEX tool_cache_by_user ON tool_cache (user_id);
CREATE INDEX tool_cache_by_session ON tool_cache (session);
CREATE INDEX tool_cache_by_age ON tool_cache (stored);`, `
CREATE TABLE attachments (
	session TEXT   NOT NULL,
	sha256  TEXT   NOT NULL,
	mime    TEXT   NOT NULL,
	size    BIGINT NOT NULL,
	data    BYTEA  NOT NULL,
	PRIMARY KEY (session, sha256)
);`,
	// The transcript projection (transcript.go) and the triggers that drop a session's
	// whenever one of its entries is deleted or rewritten.
	migrateTranscripts}

// SchemaVersion is the version this code writes.
var SchemaVersion = len(migrations)

// migrateLock is the advisory lock key migrations hold ("agenthost" in ASCII).
const migrateLock = 0x6167656e74686f

func migrate(ctx context.Context, d *db) error {
	for {
		done := false
		err := d.BeginFunc(ctx, func(tx pgx.Tx) error {
			// The lock comes first: CREATE TABLE IF NOT EXISTS is not safe against a
			// second process creating the table at the same moment.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS agenthost_schema (version INTEGER NOT NULL)`); err != nil {
				return err
			}
			var v int
			err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM agenthost_schema`).Scan(&v)
			if err != nil {
				return err
			}
			if v > len(migrations) {
				return fmt.Errorf("the database has schema version %d, newer than this agenthost knows (%d): use a newer agenthost", v, len(migrations))
			}
			if v == len(migrations) {
				done = true
				return nil
			}
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("to version %d: %w", v+1, err)
			}
			if migrations[v] == migrateAuditGenesis {
				if err := writeGenesis(ctx, tx); err != nil {
					return fmt.Errorf("to version %d: %w", v+1, err)
				}
			}
			if _, err := tx.Exec(ctx, `DELETE FROM agenthost_schema`); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO agenthost_schema (version) VALUES ($1)`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}
