package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// A run's start reads two things of its session: its claim state (lease, run id used,
// open runs) and its head (sqlitehead.go). Read apart they were two read transactions
// (pointreads.go), and the first of them, after the writer's last commit, re-read
// the pages it needed; read together they are one statement (one snapshot): the claim
// row first (seq -1, its columns in a JSON array in the body column), then the head's
// rows, as LoadHead reads them (two columns: a row of more would cost every message of
// a long session's first read the driver's values for the extra ones).
const claimRow = `SELECT -1, json_array(EXISTS (SELECT 1 FROM runs WHERE sid = ` + sidOf + ` AND id = ?), EXISTS (SELECT 1 FROM runs WHERE sid = ` + sidOf + ` AND status = ''),
		l.session, l.run_id, l.pid, l.host, l.instance, l.heartbeat) FROM (SELECT 1) LEFT JOIN leases l ON l.session = ?`

// qClaimProjected is the claim row and a cold head (no head kept of the session) read
// from the transcript projection (qHeadProjected), in one statement: the claim row has
// tag -1 and its array in the third column.
const qClaimProjected = `SELECT -1, 0, json_array(EXISTS (SELECT 1 FROM runs WHERE sid = (SELECT sid FROM session_keys WHERE id = ?1) AND id = ?2),
		EXISTS (SELECT 1 FROM runs WHERE sid = (SELECT sid FROM session_keys WHERE id = ?1) AND status = ''),
		l.session, l.run_id, l.pid, l.host, l.instance, l.heartbeat) FROM (SELECT 1) LEFT JOIN leases l ON l.session = ?1
UNION ALL
SELECT * FROM (` + "\n" + `%s)`

var (
	qClaimHead      = claimRow + "\nUNION ALL\n" + headRows("", false) + ` ORDER BY 1`
	qClaimHeadSince = claimRow + "\nUNION ALL\n" + headRows("", true) + ` ORDER BY 1`
)

// claimColumns are the claim row's columns, in its JSON array's order.
type claimColumns struct {
	used, open                         int
	session, runID, host, instance, hb *string
	pid                                *int
}

// decodeClaim fills cs from the claim row's array.
func decodeClaim(b []byte, cs *loop.ClaimState) error {
	var c claimColumns
	if err := json.Unmarshal(b, &[]any{&c.used, &c.open, &c.session, &c.runID, &c.pid, &c.host, &c.instance, &c.hb}); err != nil {
		return fmt.Errorf("claim row: %w", err)
	}
	cs.RunUsed, cs.OpenRuns = c.used != 0, c.open != 0
	if c.session != nil && c.runID != nil && c.pid != nil && c.host != nil && c.instance != nil && c.hb != nil {
		cs.Held = true
		cs.Lease = loop.Lease{SessionID: *c.session, RunID: *c.runID, PID: *c.pid, Host: *c.host, Instance: *c.instance, Heartbeat: parseTime(*c.hb)}
	}
	return nil
}

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
	if !cached {
		return s.claimCold(ctx, session, runID)
	}
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
		if err := rows.Scan(&seq, &stored); err != nil {
			return cs, fmt.Errorf("claim state of session %q: %w", session, err)
		}
		if seq == -1 {
			claimed = true
			if err := decodeClaim(stored, &cs); err != nil {
				return cs, fmt.Errorf("claim state of session %q: %w", session, err)
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

var qClaimCold = fmt.Sprintf(qClaimProjected, qHeadProjected)

// claimCold is ClaimState of a session no head is kept of: its head from the transcript
// projection, as LoadHead reads it cold (transcriptread.go). Where the projection cannot
// be used, or a row does not decode, Head is left nil, and the run's LoadHead reads the
// session from its entries, says why in the log and rebuilds the projection.
func (s *SQLite) claimCold(ctx context.Context, session, runID string) (loop.ClaimState, error) {
	var cs loop.ClaimState
	var claimErr error
	claimed := false
	h, r, err := s.readHead(ctx, qClaimCold, session, func(b []byte) {
		claimed, claimErr = true, decodeClaim(b, &cs)
	}, session, runID)
	switch {
	case !claimed && err != nil:
		return cs, fmt.Errorf("claim state of session %q: %w", session, err)
	case !claimed:
		return cs, fmt.Errorf("claim state of session %q: no claim row", session)
	case claimErr != nil:
		return cs, fmt.Errorf("claim state of session %q: %w", session, claimErr)
	case err != nil || r.why != "":
		return cs, nil
	}
	h = s.adoptCold(ctx, session, h, r)
	cs.Head = &h
	return cs, nil
}
