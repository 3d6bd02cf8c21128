package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// rowsPerInsert is how many entries one INSERT statement carries at most. A write of a
// run stores 3–10 entries; one statement for them all, instead of one each, saves each
// row database/sql's and the driver's round trip and SQLite's statement start (about a
// third of inserting an entry).
const rowsPerInsert = 16

// qInsertRows[n] inserts n entries (n ≤ rowsPerInsert): a constant text per n, so each
// is prepared once on the write connection (stmtCache).
var qInsertRows = func() [rowsPerInsert + 1]string {
	var qs [rowsPerInsert + 1]string
	for n := 1; n <= rowsPerInsert; n++ {
		qs[n] = `INSERT INTO entries (sid, session, seq, run_id, time, kind, body) VALUES (?, ?, ?, ?, ?, ?, ?)` +
			strings.Repeat(`, (?, ?, ?, ?, ?, ?, ?)`, n-1)
	}
	return qs
}()

// insertEntriesTx inserts es, whose seqs the caller checked, in as few statements as
// rowsPerInsert allows.
func (w *writer) insertEntriesTx(ctx context.Context, tx *wtx, sid int64, session string, es []encoded) error {
	args := make([]any, 0, 7*min(len(es), rowsPerInsert))
	// Each value given as an argument is boxed (an allocation for a string, a slice or
	// an integer past 255): the values every row shares are boxed once.
	sidA, sessionA := any(sid), any(session)
	var runID string
	var runA any
	for len(es) > 0 {
		n := min(len(es), rowsPerInsert)
		args = args[:0]
		for _, e := range es[:n] {
			if runA == nil || e.runID != runID {
				runID, runA = e.runID, any(e.runID)
			}
			args = append(args, sidA, sessionA, e.seq, runA, e.time, kindArg(e.kind), e.body)
		}
		if _, err := tx.ExecContext(ctx, qInsertRows[n], args...); err != nil {
			if n == 1 {
				return fmt.Errorf("entry %d: %w", es[0].seq, err)
			}
			return fmt.Errorf("entries %d–%d: %w", es[0].seq, es[n-1].seq, err)
		}
		es = es[n:]
	}
	return nil
}

// The entry kinds as arguments, boxed once.
var (
	kindMessage    any = string(loop.EntryMessage)
	kindEvent      any = string(loop.EntryEvent)
	kindCompaction any = string(loop.EntryCompaction)
)

func kindArg(kind string) any {
	switch kind {
	case string(loop.EntryMessage):
		return kindMessage
	case string(loop.EntryEvent):
		return kindEvent
	case string(loop.EntryCompaction):
		return kindCompaction
	}
	return kind
}
