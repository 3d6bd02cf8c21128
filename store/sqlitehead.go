package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.HeadLoader = (*SQLite)(nil)

// qHead reads what a run starts from (loop.SessionHead), from seq on: the session's
// message and compaction entries and its last event, in seq order, in one statement
// (one snapshot). The other events' bodies are neither read into Go nor decoded: the
// partial index entries_transcript (migrateV12TranscriptIndex) holds the transcript's
// rows, so SQLite does not step over the events either, and the last event is found
// from the end of the session's rows. qHeadSince adds the anchor of a cached head
// (headcache.go): the row at its last seq, with a NULL body, when it still holds the
// same bytes. Their arguments are headArgs'. pad pads each row with NULLs, for a
// statement that unites them with rows of more columns (qClaimHead).
func headRows(pad string, since bool) string {
	q := `SELECT seq, body` + pad + ` FROM entries INDEXED BY entries_transcript WHERE sid = ` + sidOf + ` AND seq > ? AND kind <> 'event'
UNION ALL
SELECT seq, body` + pad + ` FROM (SELECT seq, body FROM entries WHERE sid = ` + sidOf + ` AND seq > ? AND kind = 'event' ORDER BY seq DESC LIMIT 1)`
	if since {
		q += `
UNION ALL
SELECT seq, NULL` + pad + ` FROM entries WHERE sid = ` + sidOf + ` AND seq = ? AND body = ?`
	}
	return q
}

var (
	qHead      = headRows("", false) + ` ORDER BY seq`
	qHeadSince = headRows("", true) + ` ORDER BY seq`
)

// headArgs are headRows' arguments for a read after from.
func headArgs(session string, from HeadSnapshot) []any {
	since := from.Head.LastSeq
	args := []any{session, since, session, since}
	if since > 0 {
		args = append(args, session, since, from.Anchor)
	}
	return args
}

// LoadHead implements loop.HeadLoader: the session's transcript and where its
// numberings stand, without its events; of a session loaded before, only what was
// appended since is read (HeadCache).
func (s *SQLite) LoadHead(ctx context.Context, session string) (loop.SessionHead, error) {
	if err := s.watch.check(); err != nil {
		return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
	}
	if snap, ok := s.heads.Get(session); ok {
		h, anchored, err := s.loadHead(ctx, session, snap)
		if err != nil || anchored {
			return h, err
		}
		s.heads.Drop(session) // not the session cached: read it whole
	}
	return s.loadHeadCold(ctx, session) // from the transcript projection (transcript.go)
}

// loadHead reads the session's head after from, and whether from's anchor held (always
// true from the zero snapshot).
func (s *SQLite) loadHead(ctx context.Context, session string, from HeadSnapshot) (loop.SessionHead, bool, error) {
	q := qHead
	if from.Head.LastSeq > 0 {
		q = qHeadSince
	}
	rows, err := s.point.query(ctx, q, headArgs(session, from)...)
	if err != nil {
		return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
	}
	defer rows.Close()
	r := headScan{s: s, session: session, from: from, r: NewHeadRead(from)}
	for rows.Next() {
		var seq int64
		var stored []byte
		if err := rows.Scan(&seq, &stored); err != nil {
			return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
		}
		if err := r.add(seq, stored); err != nil {
			return loop.SessionHead{}, false, err
		}
	}
	if err := rows.Err(); err != nil {
		return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
	}
	h, anchored := r.r.Done(s.heads, session)
	return h, anchored, nil
}

// headScan decodes the rows of a head read after from.
type headScan struct {
	s       *SQLite
	session string
	from    HeadSnapshot
	r       *HeadRead
}

// add takes one row: the anchor (from's last seq) or an entry after it.
func (h *headScan) add(seq int64, stored []byte) error {
	if since := h.from.Head.LastSeq; since > 0 && seq == since {
		h.r.Anchored()
		return nil
	}
	body, err := h.s.keys.Open(stored, seal.EntryAAD(h.session, seq))
	if err != nil {
		return fmt.Errorf("load session %q: entry %d: %w", h.session, seq, err)
	}
	e, err := decodeEntry(seq, body)
	if err != nil {
		return fmt.Errorf("load session %q: %w", h.session, err)
	}
	h.r.Add(e, stored)
	return nil
}

// migrateV12TranscriptIndex indexes the rows of a session's transcript (its messages
// and compactions, a fifth of its entries) so a run's start reads them without stepping
// over the events (qHead).
func migrateV12TranscriptIndex(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `CREATE INDEX entries_transcript ON entries (session, seq) WHERE kind <> 'event'`)
	return err
}
