package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// A run's start reads two things of its session: its claim state (lease, run id used,
// open runs) and its head (sqlitehead.go). Read apart they were two read transactions on
// the point-read pool, and the first of them, after the writer's last commit, dropped the
// connection's page cache; read together they are one statement (one snapshot): the
// claim row first (seq -1), then the head's rows, each padded to the claim row's columns.
const claimRow = `SELECT -1, NULL, EXISTS (SELECT 1 FROM runs WHERE sid = ` + sidOf + ` AND id = ?), EXISTS (SELECT 1 FROM runs WHERE sid = ` + sidOf + ` AND status = ''),
		l.session, l.run_id, l.pid, l.host, l.instance, l.heartbeat FROM (SELECT 1) LEFT JOIN leases l ON l.session = ?`

// claimPad pads a head row to the claim row's ten columns.
var claimPad = strings.Repeat(", NULL", 8)

var (
	qClaimHead      = claimRow + "\nUNION ALL\n" + headRows(claimPad, false) + ` ORDER BY 1`
	qClaimHeadSince = claimRow + "\nUNION ALL\n" + headRows(claimPad, true) + ` ORDER BY 1`
)

// ClaimState implements loop.ClaimAppender: the claim state and the session's head
// (ClaimState.Head) in one statement of indexed reads, whatever the session's history
// (Runs would read and decode every run). A cached head whose anchor no longer holds
// leaves Head nil: the run then reads the session whole (LoadHead); so does a row that
// does not decode, and the run's LoadHead reports it as before.
func (s *SQLite) ClaimState(ctx context.Context, session, runID string) (loop.ClaimState, error) {
	var cs loop.ClaimState
	if err := s.watch.check(); err != nil {
		return cs, fmt.Errorf("claim state of session %q: %w", session, err)
	}
	from, cached := s.heads.Get(session)
	q := qClaimHead
	if cached && from.Head.LastSeq > 0 {
		q = qClaimHeadSince
	}
	args := append([]any{session, runID, session, session}, headArgs(session, from)...)
	rows, err := s.point.query(ctx, q, args...)
	if err != nil {
		return cs, fmt.Errorf("claim state of session %q: %w", session, err)
	}
	defer rows.Close()
	hs := headScan{s: s, session: session, from: from, r: NewHeadRead(from)}
	claimed, headOK := false, true
	for rows.Next() {
		var seq int64
		var stored []byte
		var used, open sql.NullBool
		var ls, lr, lh, li, hb sql.NullString
		var pid sql.NullInt64
		if err := rows.Scan(&seq, &stored, &used, &open, &ls, &lr, &pid, &lh, &li, &hb); err != nil {
			return cs, fmt.Errorf("claim state of session %q: %w", session, err)
		}
		if seq == -1 {
			claimed = true
			cs.RunUsed, cs.OpenRuns = used.Bool, open.Bool
			if ls.Valid {
				cs.Held = true
				cs.Lease = loop.Lease{SessionID: ls.String, RunID: lr.String, PID: int(pid.Int64), Host: lh.String, Instance: li.String, Heartbeat: parseTime(hb.String)}
			}
			continue
		}
		if headOK && hs.add(seq, stored) != nil {
			headOK = false
		}
	}
	if err := rows.Err(); err != nil {
		return cs, fmt.Errorf("claim state of session %q: %w", session, err)
	}
	if !claimed {
		return cs, fmt.Errorf("claim state of session %q: no claim row", session)
	}
	if !headOK {
		return cs, nil
	}
	if h, anchored := hs.r.Done(s.heads, session); anchored {
		cs.Head = &h
	} else {
		s.heads.Drop(session) // not the session cached: the run reads it whole
	}
	return cs, nil
}
