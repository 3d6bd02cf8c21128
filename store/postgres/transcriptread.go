package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// qHeadProjected reads a run's start from the transcript projection (transcript.go) in
// one statement, one snapshot: how many transcript rows the entries hold up to where the
// chunks end (tag 0: as many as the chunks must hold), the session's chunks in order (1),
// the row at the seq they end at (2: they must end on a transcript row), the transcript
// rows after it (3: fewer than TranscriptLagMin, as the projection lags), and the
// session's last event (4). Chunks are bytea, entries jsonb: each row fills one of the
// two. qHeadEntries is the same without the projection: every transcript row, and the
// last event.
var qHeadProjected, qHeadEntries = func() (string, string) {
	const q = `SELECT 3, e.seq, NULL::bytea, e.body FROM entries e, p WHERE e.session = $1 AND e.kind <> 'event' AND e.seq > p.l
UNION ALL (SELECT 4, seq, NULL, body FROM entries WHERE session = $1 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
ORDER BY 1, 2`
	return `WITH p AS (SELECT COALESCE(MAX(last_seq), 0) AS l FROM transcripts WHERE session = $1)
SELECT 0, COUNT(*), NULL::bytea, NULL::jsonb FROM entries e, p WHERE e.session = $1 AND e.kind <> 'event' AND e.seq <= p.l
UNION ALL SELECT 1, chunk::bigint, body, NULL FROM transcripts WHERE session = $1
UNION ALL SELECT 2, e.seq, NULL, e.body FROM entries e, p WHERE e.session = $1 AND e.seq = p.l AND e.kind <> 'event'
UNION ALL ` + q, `WITH p AS (SELECT 0::bigint AS l)
` + q
}()

type headRow struct {
	seq  int64
	body []byte // as stored
}

// coldRead is a head as qHeadProjected's rows make it.
type coldRead struct {
	tr        []loop.Entry     // the chunks' entries, then the rows after them
	cold      store.ColdChunks // the chunks, and their messages in one array
	counted   int64            // the entries' transcript rows up to where the chunks end
	why       string           // why the chunks cannot be used ("" if they can)
	atEnd     headRow          // the row at the seq the chunks end at
	more      []headRow        // transcript rows after the chunks
	lastEvent headRow
}

// loadHeadCold is LoadHead of a session no head is kept of: from its projection, or
// from its entries (the projection then rebuilt) where it is absent, behind or
// disagrees with them.
func (s *Store) loadHeadCold(ctx context.Context, session string) (loop.SessionHead, error) {
	h, r, err := s.readCold(ctx, qHeadProjected, session)
	if err != nil {
		return h, err
	}
	switch {
	case r.why != "":
		s.logger().Warn("store: the transcript projection disagrees with its entries: read from the entries, rebuilt", "session", session, "why", r.why)
		if h, r, err = s.readCold(ctx, qHeadEntries, session); err != nil {
			return h, err
		}
		s.rebuild(ctx, session, h.Transcript, lastRow(r.more))
	case r.cold.Chunks() == 0 && len(r.more) >= store.TranscriptLagMin, len(r.more) >= store.TranscriptLagCap:
		// None (a session stored before migration 15, or dropped by a trigger), or one
		// left behind (a write that found a pending row it could not decode).
		s.rebuild(ctx, session, h.Transcript, lastRow(r.more))
	}
	if h.LastSeq == 0 {
		return h, nil
	}
	anchor := r.lastEvent
	for _, row := range []headRow{r.atEnd, lastRow(r.more)} {
		if row.seq > anchor.seq {
			anchor = row
		}
	}
	return s.heads.Adopt(session, h, anchor.body), nil
}

func lastRow(rows []headRow) headRow {
	if len(rows) == 0 {
		return headRow{}
	}
	return rows[len(rows)-1]
}

// readCold runs q (qHeadProjected or qHeadEntries) and makes the head of its rows. With
// r.why set the head is not made (the chunks cannot be used).
func (s *Store) readCold(ctx context.Context, q, session string) (loop.SessionHead, coldRead, error) {
	var r coldRead
	fail := func(err error) (loop.SessionHead, coldRead, error) {
		return loop.SessionHead{}, r, fmt.Errorf("load session %q: %w", session, err)
	}
	rows, err := s.db.Query(ctx, q, session)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var tag int
		var seq int64
		var chunk pgtype.DriverBytes // decoded before the next row: not copied first
		var body []byte
		if err := rows.Scan(&tag, &seq, &chunk, &body); err != nil {
			rows.Close()
			return fail(err)
		}
		switch tag {
		case 0:
			r.counted = seq
		case 1: // opened and checked now, decoded once all have come
			r.cold.Add(s.keys, session, seq, chunk)
		case 2:
			r.atEnd = headRow{seq, body}
		case 3:
			r.more = append(r.more, headRow{seq, body})
		case 4:
			r.lastEvent = headRow{seq, body}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	r.tr, r.why = r.cold.Decode(len(r.more))
	r.check()
	if r.why != "" {
		return loop.SessionHead{}, r, nil
	}
	h := loop.SessionHead{Transcript: slices.Grow(r.tr, len(r.more))}
	for _, row := range r.more {
		e, err := s.decodeEntry(session, row.seq, row.body)
		if err != nil {
			return loop.SessionHead{}, r, err
		}
		h.Transcript = append(h.Transcript, r.cold.InArray(e))
	}
	if r.lastEvent.seq > 0 {
		e, err := s.decodeEntry(session, r.lastEvent.seq, r.lastEvent.body)
		if err != nil {
			return loop.SessionHead{}, r, err
		}
		if e.Event != nil {
			h.LastEventSeq = e.Event.Seq
		}
	}
	h.LastSeq = max(r.atEnd.seq, lastRow(r.more).seq, r.lastEvent.seq)
	if len(h.Transcript) == 0 {
		h.Transcript = nil
	}
	r.cold.SetMessages(&h) // a cold read's: the cached head never has them (HeadCache.Adopt)
	return h, r, nil
}

// check says in r.why why the chunks read cannot be the transcript's first entries: they
// must end on the transcript row the table says they end at, and hold as many entries as
// the entries' transcript has up to it.
func (r *coldRead) check() {
	if r.why != "" || r.cold.Chunks() == 0 {
		return
	}
	end := int64(0)
	if len(r.tr) > 0 {
		end = r.tr[len(r.tr)-1].Seq
	}
	switch {
	case end == 0 || r.atEnd.seq != end:
		r.why = fmt.Sprintf("the projection ends at entry %d, the entries' transcript row there is %d", end, r.atEnd.seq)
	case r.counted != int64(len(r.tr)):
		r.why = fmt.Sprintf("the projection holds %d entries up to entry %d, the entries %d", len(r.tr), end, r.counted)
	}
}

// logger is where the store's own reports go (tests set log).
func (s *Store) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}
