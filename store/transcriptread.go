package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// qHeadProjected reads a run's start from the transcript projection, in one statement
// (one snapshot): the session's chunks in order (tag 0), the row at the seq the chunks
// end at (1: they must end on a transcript row), the transcript rows after it (2: the
// projection lags its entries by fewer than lagMin of them, transcript.go), and the
// session's last event (3). qHeadEntries is the same without the projection: every
// transcript row, and the last event. No statement counts or steps over the rows the
// chunks hold: what they hold is the entries' by construction (transcript.go), checked
// by their checksum or seal, their order and where they end. Their one argument (?1)
// is the session's id; qClaimProjected's claim row (sqliteclaim.go) adds ?2.
var qHeadProjected, qHeadEntries = func() (string, string) {
	const sid = `(SELECT sid FROM session_keys WHERE id = ?1)`
	const q = `SELECT 2, seq, body FROM entries INDEXED BY entries_transcript WHERE sid = ` + sid + ` AND kind <> 'event' AND seq > %[1]s
UNION ALL SELECT * FROM (SELECT 3, seq, body FROM entries WHERE sid = ` + sid + ` AND kind = 'event' ORDER BY seq DESC LIMIT 1)`
	const l = `(SELECT COALESCE(MAX(last_seq), 0) FROM transcripts WHERE sid = ` + sid + `)`
	return `SELECT * FROM (SELECT 0, chunk, body FROM transcripts WHERE sid = ` + sid + ` ORDER BY chunk)
UNION ALL SELECT 1, seq, body FROM entries WHERE sid = ` + sid + ` AND seq = ` + l + ` AND kind <> 'event'
UNION ALL ` + fmt.Sprintf(q, l), fmt.Sprintf(q, "0")
}()

type headRow struct {
	seq  int64
	body []byte // as stored
}

// headRead is a head as qHeadProjected's rows make it.
type headRead struct {
	tr        []loop.Entry // the chunks' entries, then the rows after them
	cold      ColdChunks   // the chunks, and their messages in one array (transcriptcold.go)
	why       string       // why the chunks cannot be used ("" if they can)
	atEnd     headRow      // the row at the seq the chunks end at
	more      []headRow    // transcript rows after the chunks
	lastEvent headRow
}

// loadHeadCold is LoadHead of a session no head is kept of: from its projection, or
// from its entries (the projection then rebuilt) where it is absent or disagrees.
func (s *SQLite) loadHeadCold(ctx context.Context, session string) (loop.SessionHead, error) {
	h, r, err := s.readHead(ctx, qHeadProjected, session, nil, session)
	if err != nil {
		return h, err
	}
	if r.why != "" {
		s.logger().Warn("store: the transcript projection disagrees with its entries: read from the entries, rebuilt", "session", session, "why", r.why)
		if h, r, err = s.readHead(ctx, qHeadEntries, session, nil, session); err != nil {
			return h, err
		}
		s.rebuild(ctx, session, h, r)
	}
	return s.adoptCold(ctx, session, h, r), nil
}

// adoptCold keeps a head read whole as the session's (rebuilding its projection where
// it has none though lagMin transcript rows or more: a session stored before it, or
// one whose projection a trigger dropped).
func (s *SQLite) adoptCold(ctx context.Context, session string, h loop.SessionHead, r headRead) loop.SessionHead {
	if r.cold.Chunks() == 0 && len(r.more) >= lagMin {
		s.rebuild(ctx, session, h, r)
	}
	if h.LastSeq == 0 {
		return h
	}
	anchor := r.lastEvent
	for _, row := range []headRow{r.atEnd, lastRow(r.more)} {
		if row.seq > anchor.seq {
			anchor = row
		}
	}
	return s.heads.adopt(session, h, anchor.body)
}

func (s *SQLite) rebuild(ctx context.Context, session string, h loop.SessionHead, r headRead) {
	if err := s.rebuildTranscript(ctx, session, h, r.more); err != nil {
		s.logger().Warn("store: the transcript projection was not rebuilt", "session", session, "err", err)
	}
}

func lastRow(rows []headRow) headRow {
	if len(rows) == 0 {
		return headRow{}
	}
	return rows[len(rows)-1]
}

// readHead runs q (qHeadProjected, qHeadEntries or qClaimProjected) with args and makes
// the head of its rows; a row tagged -1 (the claim row) goes to other. With r.why set
// the head is not made (the chunks cannot be used).
func (s *SQLite) readHead(ctx context.Context, q, session string, other func([]byte), args ...any) (loop.SessionHead, headRead, error) {
	var r headRead
	fail := func(err error) (loop.SessionHead, headRead, error) {
		return loop.SessionHead{}, r, fmt.Errorf("load session %q: %w", session, err)
	}
	if err := s.scanHead(ctx, q, session, &r, other, args); err != nil {
		return fail(err)
	}
	r.tr, r.why = r.cold.Decode(len(r.more))
	if end := lastSeqOf(r.tr); r.why == "" && r.cold.Chunks() > 0 && (end == 0 || r.atEnd.seq != end) {
		r.why = fmt.Sprintf("the projection ends at entry %d, the entries' transcript row there is %d", end, r.atEnd.seq)
	}
	if r.why != "" {
		return loop.SessionHead{}, r, nil
	}
	if !slices.IsSortedFunc(r.more, func(a, b headRow) int { return int(a.seq - b.seq) }) {
		slices.SortFunc(r.more, func(a, b headRow) int { return int(a.seq - b.seq) })
	}
	h := loop.SessionHead{Transcript: slices.Grow(r.tr, len(r.more))}
	for _, row := range r.more {
		e, err := s.openEntry(session, row)
		if err != nil {
			return fail(err)
		}
		if isTranscript(&e) {
			h.Transcript = append(h.Transcript, r.cold.InArray(e))
		}
	}
	if r.lastEvent.seq > 0 {
		e, err := s.openEntry(session, r.lastEvent)
		if err != nil {
			return fail(err)
		}
		if e.Event != nil {
			h.LastEventSeq = e.Event.Seq
		}
	}
	h.LastSeq = max(r.atEnd.seq, lastRow(r.more).seq, r.lastEvent.seq)
	if len(h.Transcript) == 0 {
		h.Transcript = nil
	}
	r.cold.SetMessages(&h)
	return h, r, nil
}

// scanHead reads q's rows into r (the claim row to other).
func (s *SQLite) scanHead(ctx context.Context, q, session string, r *headRead, other func([]byte), args []any) error {
	rows, err := s.point.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tag int
		var seq int64
		var raw sql.RawBytes // a chunk is decoded from the driver's copy, not a second one
		if err := rows.Scan(&tag, &seq, &raw); err != nil {
			return err
		}
		switch tag {
		case -1:
			other(raw)
		case 0:
			r.cold.Add(s.keys, session, seq, raw)
		case 1:
			r.atEnd = headRow{seq, bytes.Clone(raw)}
		case 2:
			r.more = append(r.more, headRow{seq, bytes.Clone(raw)})
		case 3:
			r.lastEvent = headRow{seq, bytes.Clone(raw)}
		}
	}
	return rows.Err()
}

// headSpare is the room a cold read leaves after its messages and entries: for the
// transcript rows after the projection (fewer than lagMin), and for a run's own
// messages (its input, a tool round, its answer) to be appended without a copy.
const headSpare = lagMin + 8

func lastSeqOf(es []loop.Entry) int64 {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

func (s *SQLite) openEntry(session string, row headRow) (loop.Entry, error) {
	body, err := s.keys.Open(row.body, seal.EntryAAD(session, row.seq))
	if err != nil {
		return loop.Entry{}, fmt.Errorf("entry %d: %w", row.seq, err)
	}
	return decodeEntry(row.seq, body)
}

// adopt keeps h, read whole, as the session's head, without copying its transcript (the
// store's to give: the cache appends past its length, which no caller sees).
func (c *HeadCache) adopt(session string, h loop.SessionHead, anchor []byte) loop.SessionHead {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.by[session]; ok {
		c.removeLocked(el)
	}
	kept := h
	kept.Messages = nil // the caller's alone: a cached head is shared
	c.by[session] = c.lru.PushFront(&cachedHead{session: session, head: kept, anchor: anchor})
	c.entries += len(h.Transcript)
	for c.entries > c.max && c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
	}
	h.Transcript = h.Transcript[:len(h.Transcript):len(h.Transcript)]
	return h
}

func (s *SQLite) logger() *slog.Logger {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.log
}
