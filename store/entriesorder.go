package store

import (
	"context"
	"database/sql"
)

// migrateV16EntriesInAppendOrder keeps entries in the order they were appended, under
// SQLite's integer rowid, with (session, seq) a unique index beside them. Keyed by
// (session, seq) in the table itself (WITHOUT ROWID), a new session's rows landed in a
// leaf at a random place of the table, so every write of a run rebalanced a full leaf
// with its siblings: a one-step run wrote about 35 pages to the WAL, 24 of them the
// table's. Appended at the table's right edge, a write fills its last leaf and starts a
// new one; only the small index entries go to random leaves. Every query by (session,
// seq) reads as before, through the index; a transcript row (entries_transcript) is
// found by its rowid, a cheaper search than the key it was found by.
//
// It also drops runs_by_session (session, started): runs are keyed by (session, id), so
// a session's runs are found by the key, and sorting the few of one session by start
// costs less than an index page written for every new run.
func migrateV16EntriesInAppendOrder(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE entries_v16 (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	run_id  TEXT    NOT NULL,
	time    TEXT    NOT NULL,
	kind    TEXT    NOT NULL,
	body    BLOB    NOT NULL
);
INSERT INTO entries_v16 (session, seq, run_id, time, kind, body)
	SELECT session, seq, run_id, time, kind, body FROM entries ORDER BY session, seq;
DROP TABLE entries;
ALTER TABLE entries_v16 RENAME TO entries;
CREATE UNIQUE INDEX entries_by_session ON entries (session, seq);
CREATE INDEX entries_transcript ON entries (session, seq) WHERE kind <> 'event';
DROP INDEX runs_by_session;`)
	return err
}
