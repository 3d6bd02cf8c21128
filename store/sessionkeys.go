package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// migrateV17SessionKeys gives every session a small integer key (session_keys.sid),
// assigned in the order sessions first wrote, and keys the b-trees a run writes at each
// step by it instead of by the session's text id: the entries' (session, seq) index and
// the transcript index, and runs. Session ids are random text, so a new session's index
// entries and run record landed in leaves anywhere in those trees; keyed by sid, a new
// session's rows land at the right edge of each tree, in the leaves the runs before it
// wrote, and an index entry is a few bytes instead of the text id's ~30 (fewer leaves,
// fewer splits). The text id stays the public id and stays in every row (entries.session,
// runs.session); session_keys maps it to sid, keyed by the text (one leaf written once
// per new session). leases keep the text key: the table holds only live runs' rows (one
// page). One transaction (migrateOne): killed mid-way, the file stays at version 16.
func migrateV17SessionKeys(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE session_keys (
	id  TEXT PRIMARY KEY,
	sid INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO session_keys (id, sid)
	SELECT session, ROW_NUMBER() OVER (ORDER BY MIN(rowid)) FROM entries GROUP BY session;
INSERT INTO session_keys (id, sid)
	SELECT session, (SELECT COUNT(*) FROM session_keys) + ROW_NUMBER() OVER (ORDER BY MIN(started), session)
	FROM runs WHERE session NOT IN (SELECT id FROM session_keys) GROUP BY session;
ALTER TABLE entries ADD COLUMN sid INTEGER NOT NULL DEFAULT 0;
UPDATE entries SET sid = (SELECT k.sid FROM session_keys k WHERE k.id = entries.session);
DROP INDEX entries_by_session;
DROP INDEX entries_transcript;
CREATE UNIQUE INDEX entries_by_session ON entries (sid, seq);
CREATE INDEX entries_transcript ON entries (sid, seq) WHERE kind <> 'event';
CREATE TABLE runs_v17 (
	sid     INTEGER NOT NULL,
	id      TEXT NOT NULL,
	session TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	usage   TEXT NOT NULL,
	PRIMARY KEY (sid, id)
) WITHOUT ROWID;
INSERT INTO runs_v17 (sid, id, session, status, reason, started, ended, usage)
	SELECT k.sid, r.id, r.session, r.status, r.reason, r.started, r.ended, r.usage FROM runs r JOIN session_keys k ON k.id = r.session;
DROP TABLE runs;
ALTER TABLE runs_v17 RENAME TO runs;`)
	return err
}

// sidOf is a statement's session key, from its text id (NULL for a session that has
// none: it matches no row).
const sidOf = `(SELECT sid FROM session_keys WHERE id = ?)`

const (
	// qWriteState is what a write reads of its session first, in one statement: its
	// key (0: none yet), its last seq, its lease compared with the write's fence (0: no
	// lease, 1: the fence's, 2: another), where its transcript projection stands
	// (trWriteState, transcript.go) and whether a run id is used already (a claim's
	// check). Five integers: a column costs the driver two strings a statement, and a
	// text column a string a row; the lease is read whole only to name another holder.
	// Its arguments are writeStateArgs'.
	qWriteState = `SELECT COALESCE(k.sid, 0), COALESCE((SELECT MAX(e.seq) FROM entries e WHERE e.sid = k.sid), 0),
		CASE WHEN l.session IS NULL THEN 0 WHEN l.run_id = ? AND l.instance = ? AND l.pid = ? THEN 1 ELSE 2 END,
		` + trWriteState + `, EXISTS (SELECT 1 FROM runs r WHERE r.sid = k.sid AND r.id = ?)
		FROM (SELECT 1) LEFT JOIN session_keys k ON k.id = ? LEFT JOIN leases l ON l.session = ?`
	// qNewSessionKey keys a new session with the next integer. A key is made in the
	// transaction that writes the session's first entry or run and deleted with the
	// session's rows, so the largest key in use is the largest in entries or runs, each
	// read from its index's right edge.
	qNewSessionKey = `INSERT INTO session_keys (id, sid) VALUES (?, 1 + MAX(COALESCE((SELECT MAX(sid) FROM entries), 0), COALESCE((SELECT MAX(sid) FROM runs), 0))) RETURNING sid`
)

// writeState is what a write knows of its session before writing: its key (sid) and its
// last entry's seq, and where its transcript projection stands.
type writeState struct {
	sid, last int64
	// trEnd is the seq the transcript projection ends at (0: none), trPending how many
	// transcript rows follow it (at most lagCap).
	trEnd, trPending int64
	// runUsed: the run id sessionTx was asked about has a record in the session.
	runUsed bool
}

// writeStateRow is qWriteState's row, scanned into one value (one allocation, not one
// a column).
type writeStateRow struct {
	sid, last, lease, trEnd, trPending, used int64
}

// sessionTx reads session's write state, refuses a write whose fence is not the
// session's lease (loop/fence.go: a writer paused past its lease cannot write after it
// wakes), and keys a session that has no key yet. With a claim (the run's first write,
// loop.ClaimAppender), it takes c's lease in the same read (takeLeaseTx) and says in
// ws.runUsed whether the session has a run of id runID.
func sessionTx(ctx context.Context, tx *wtx, session, runID string, c *claim) (writeState, error) {
	var ws writeState
	f, fenced := loop.FenceOf(ctx, session)
	cmp, compared := f, fenced
	var used any // NULL: matches no run
	if c != nil {
		cmp, compared, used = c.lease, true, runID
	}
	var cRun, cInstance, cPID any // NULLs: match nothing
	if compared {
		cRun, cInstance, cPID = cmp.RunID, cmp.Instance, int64(cmp.PID)
	}
	row := new(writeStateRow)
	if err := tx.QueryRowContext(ctx, qWriteState, cRun, cInstance, cPID, used, session, session).
		Scan(&row.sid, &row.last, &row.lease, &row.trEnd, &row.trPending, &row.used); err != nil {
		return ws, err
	}
	ws = writeState{last: row.last, trEnd: row.trEnd, trPending: row.trPending, runUsed: row.used != 0}
	switch {
	case c != nil:
		if err := takeLeaseTx(ctx, tx, c, row.lease); err != nil {
			return ws, err
		}
		if fenced && !f.Same(c.lease) { // the session's lease is c's now
			return ws, loop.FenceError(f, c.lease, true)
		}
	case fenced && row.lease == 0:
		return ws, loop.FenceError(f, loop.Lease{}, false)
	case fenced && row.lease != 1:
		held, _, err := leaseTx(ctx, tx, session)
		if err != nil {
			return ws, err
		}
		return ws, loop.FenceError(f, held, true)
	}
	if row.sid != 0 {
		ws.sid = row.sid
		return ws, nil
	}
	err := tx.QueryRowContext(ctx, qNewSessionKey, session).Scan(&ws.sid)
	return ws, err
}

// Sessions lists stored sessions (those with entries or runs), most recently updated
// first: updated is the time of a session's last entry (as the memory store keeps it),
// read from that one row through the (sid, seq) index, or its last run's start when it
// has no entry. Sessions are those with a key (sessionkeys.go: made with a session's
// first entry or run, deleted with the session), so no table is scanned to find them.
func (s *SQLite) Sessions(ctx context.Context) ([]SessionInfo, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	rows, err := s.query(ctx, `SELECT id, n, updated, runs FROM (SELECT k.id,
		(SELECT COUNT(*) FROM entries e WHERE e.sid = k.sid) AS n,
		COALESCE((SELECT e.time FROM entries e WHERE e.sid = k.sid ORDER BY e.seq DESC LIMIT 1), (SELECT MAX(r.started) FROM runs r WHERE r.sid = k.sid), '') AS updated,
		(SELECT COUNT(*) FROM runs r WHERE r.sid = k.sid) AS runs
		FROM session_keys k) WHERE n > 0 OR runs > 0 ORDER BY updated DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionInfo
	for rows.Next() {
		var si SessionInfo
		var updated string
		if err := rows.Scan(&si.ID, &si.Entries, &updated, &si.Runs); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		si.Updated = parseTime(updated)
		out = append(out, si)
	}
	return out, rows.Err()
}
