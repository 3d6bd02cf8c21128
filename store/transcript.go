package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// The transcript projection: a session's transcript entries (its messages and
// compactions, what loop.HeadOf keeps) stored again in chunks of the compact encoding
// of transcriptcodec.go, so that the first run on a long session since the process
// started decodes no JSON for the messages it loads (BENCHMARKS.md, "The transcript
// projection"). The entries stay the truth (rule L21): the projection is written in
// the transaction of the entries it projects (appendTranscriptTx, from appendRowsTx),
// deleted with any entry of its session deleted or changed (two triggers: a deleted
// session, a reseal, a migration that rewrites bodies), and checked against the entries
// at every read (the transcript's row count and last seq); where it is absent or
// disagrees, the head is read from the entries and the projection rebuilt from them.
// Its chunks are sealed as entries are (transcriptAAD), so a sealed store keeps no
// message in clear in them.

// chunkMax is the size past which an append starts a new chunk instead of rewriting
// the last one: an append rewrites at most this much, and a read of 801 messages reads
// about 30 rows.
const chunkMax = 4096

// migrateTranscripts is schema migration 18 (17 is store/sqlite's per-session key): the
// projection's table and the triggers that drop a session's projection whenever one of
// its entries is deleted or rewritten. A migration that rebuilds the entries table drops
// its triggers: it must create them again (TestTranscriptProjectionIsDroppedWithItsEntries).
func migrateTranscripts(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		`CREATE TABLE transcripts (session TEXT NOT NULL, chunk INTEGER NOT NULL, last_seq INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session, chunk))`,
		`CREATE TRIGGER transcripts_entry_deleted AFTER DELETE ON entries BEGIN DELETE FROM transcripts WHERE session = OLD.session; END`,
		`CREATE TRIGGER transcripts_entry_updated AFTER UPDATE ON entries BEGIN DELETE FROM transcripts WHERE session = OLD.session; END`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// transcriptAAD binds a sealed chunk to its session and place.
func transcriptAAD(session string, chunk int64) []byte {
	return []byte("transcript\x00" + session + "\x00" + strconv.FormatInt(chunk, 10))
}

// projected is an entry's projection, made with its JSON before the write queues.
type projected struct {
	b   []byte
	n   counts
	err error // not projectable: the session's projection is dropped
}

func projectOf(e *loop.Entry) projected {
	if !isTranscript(e) {
		return projected{}
	}
	b, err := projectEntry(*e)
	return projected{b: b, n: countOf(e), err: err}
}

const (
	qTranscriptTail = `SELECT chunk, body FROM transcripts WHERE session = ? ORDER BY chunk DESC LIMIT 1`
	qTranscriptPut  = `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES (?, ?, ?, ?)
		ON CONFLICT (session, chunk) DO UPDATE SET last_seq = excluded.last_seq, body = excluded.body`
	qTranscriptDrop = `DELETE FROM transcripts WHERE session = ?`
	qHasTranscript  = `SELECT EXISTS (SELECT 1 FROM entries INDEXED BY entries_transcript WHERE session = ? AND kind <> 'event')`
)

// appendTranscriptTx adds an append's transcript entries to its session's projection, in
// the append's transaction, after its rows (last: the session's seq before them). A
// session with entries but no projection gets none here (a read rebuilds it whole), and
// a projection that does not open or decode is dropped (likewise).
func (w *writer) appendTranscriptTx(ctx context.Context, tx *wtx, session string, last int64, es []encoded) error {
	var add []byte
	var n counts
	var lastSeq int64
	for _, e := range es {
		if e.tr.err != nil {
			_, err := tx.ExecContext(ctx, qTranscriptDrop, session)
			return err
		}
		if e.tr.b != nil {
			add = append(add, e.tr.b...)
			for i := range n {
				n[i] += e.tr.n[i]
			}
			lastSeq = e.seq
		}
	}
	if add == nil {
		return nil
	}
	var chunk int64
	var stored []byte
	err := tx.QueryRowContext(ctx, qTranscriptTail, session).Scan(&chunk, &stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if last > 0 {
			var has bool
			if err := tx.QueryRowContext(ctx, qHasTranscript, session).Scan(&has); err != nil || has {
				return err
			}
		}
	case err != nil:
		return err
	default:
		plain, err := w.keys.Open(stored, transcriptAAD(session, chunk))
		if err != nil {
			_, err = tx.ExecContext(ctx, qTranscriptDrop, session)
			return err
		}
		stored = plain
		if len(stored)+len(add) > chunkMax {
			chunk, stored = chunk+1, nil
		}
	}
	body, err := appendChunk(stored, add, n)
	if err != nil {
		_, err = tx.ExecContext(ctx, qTranscriptDrop, session)
		return err
	}
	_, err = tx.ExecContext(ctx, qTranscriptPut, session, chunk, lastSeq, w.keys.Seal(body, transcriptAAD(session, chunk)))
	return err
}

// qHeadProjected reads a run's start from the projection: its chunks (tag 0), the
// transcript rows after them (1), the last event (2), the last row (3), and the count
// (4) and last seq (5) of the transcript rows the chunks should hold, in one statement
// (one snapshot). qHeadEntries is the same without the projection.
var qHeadProjected, qHeadEntries = func() (string, string) {
	const q = `SELECT 1, seq, body FROM entries INDEXED BY entries_transcript WHERE session = ?1 AND kind <> 'event' AND seq > %[1]s
UNION ALL SELECT * FROM (SELECT 2, seq, body FROM entries WHERE session = ?1 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
UNION ALL SELECT * FROM (SELECT 3, seq, body FROM entries WHERE session = ?1 ORDER BY seq DESC LIMIT 1)`
	const l = `(SELECT COALESCE(MAX(last_seq), 0) FROM transcripts WHERE session = ?1)`
	return `SELECT 0, chunk, body FROM transcripts WHERE session = ?1
UNION ALL ` + fmt.Sprintf(q, l) + `
UNION ALL SELECT 4, COUNT(*), NULL FROM entries INDEXED BY entries_transcript WHERE session = ?1 AND kind <> 'event' AND seq <= ` + l + `
UNION ALL SELECT 5, COALESCE(MAX(seq), 0), NULL FROM entries INDEXED BY entries_transcript WHERE session = ?1 AND kind <> 'event' AND seq <= ` + l,
		fmt.Sprintf(q, "0")
}()

type headRow struct {
	seq  int64
	body []byte
}

// headRows is what qHeadProjected returns, by tag.
type headRows struct {
	chunks, more     []headRow
	lastEvent, last  headRow
	count, projected int64
}

// loadHeadCold is LoadHead of a session no head is kept of: from its projection, or
// from its entries (the projection then rebuilt) where it is absent or disagrees.
func (s *SQLite) loadHeadCold(ctx context.Context, session string) (loop.SessionHead, error) {
	h, rows, why, err := s.readHead(ctx, session, qHeadProjected)
	if err != nil {
		return h, err
	}
	if why != "" {
		if len(rows.chunks) > 0 {
			s.logger().Warn("store: the transcript projection disagrees with its entries: read from the entries, rebuilt", "session", session, "why", why)
			if h, rows, _, err = s.readHead(ctx, session, qHeadEntries); err != nil {
				return h, err
			}
		}
		if err := s.rebuildTranscript(ctx, session, h, rows); err != nil {
			s.logger().Warn("store: the transcript projection was not rebuilt", "session", session, "err", err)
		}
	}
	if h.LastSeq == 0 {
		return h, nil
	}
	return s.heads.Extend(session, HeadSnapshot{}, h.Transcript, h.LastSeq, h.LastEventSeq, rows.last.body), nil
}

// readHead runs q and makes the head of its rows. why says why the projection could not
// be used (absent, or not the entries'); the head is then whole only when the
// projection was absent (no chunk rows).
func (s *SQLite) readHead(ctx context.Context, session, q string) (loop.SessionHead, headRows, string, error) {
	fail := func(err error) (loop.SessionHead, headRows, string, error) {
		return loop.SessionHead{}, headRows{}, "", fmt.Errorf("load session %q: %w", session, err)
	}
	var r headRows
	rows, err := s.point.query(ctx, q, session)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var tag int
		var row headRow
		if err := rows.Scan(&tag, &row.seq, &row.body); err != nil {
			rows.Close()
			return fail(err)
		}
		switch tag {
		case 0:
			r.chunks = append(r.chunks, row)
		case 1:
			r.more = append(r.more, row)
		case 2:
			r.lastEvent = row
		case 3:
			r.last = row
		case 4:
			r.count = row.seq
		case 5:
			r.projected = row.seq
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	bySeq := func(a, b headRow) int { return int(a.seq - b.seq) }
	slices.SortFunc(r.chunks, bySeq) // no ORDER BY: a sort of the whole union would cost more
	if !slices.IsSortedFunc(r.more, bySeq) {
		slices.SortFunc(r.more, bySeq)
	}
	h := loop.SessionHead{LastSeq: r.last.seq}
	why := ""
	h.Transcript, why = s.decodeChunks(session, r)
	if why != "" && len(r.chunks) > 0 {
		return h, r, why, nil
	}
	for _, row := range r.more {
		e, err := s.openEntry(session, row)
		if err != nil {
			return fail(err)
		}
		if isTranscript(&e) {
			h.Transcript = append(h.Transcript, e)
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
	if len(h.Transcript) == 0 {
		h.Transcript = nil
	}
	return h, r, why, nil
}

func (s *SQLite) openEntry(session string, row headRow) (loop.Entry, error) {
	body, err := s.keys.Open(row.body, seal.EntryAAD(session, row.seq))
	if err != nil {
		return loop.Entry{}, fmt.Errorf("entry %d: %w", row.seq, err)
	}
	return decodeEntry(row.seq, body)
}

// decodeChunks decodes the projection's chunks and checks them against the entries'
// count and last seq; why is "" when they agree, else why not ("absent" for none).
func (s *SQLite) decodeChunks(session string, r headRows) ([]loop.Entry, string) {
	if len(r.chunks) == 0 {
		if r.count > 0 || len(r.more) > 0 {
			return nil, "absent"
		}
		return nil, ""
	}
	plains := make([][]byte, len(r.chunks))
	n := len(r.more)
	for i, c := range r.chunks {
		p, err := s.keys.Open(c.body, transcriptAAD(session, c.seq))
		if err != nil {
			return nil, fmt.Sprintf("chunk %d: %v", c.seq, err)
		}
		if len(p) >= chunkHeader {
			n += int(min(uint32(len(p)), uint32(p[8])|uint32(p[9])<<8|uint32(p[10])<<16|uint32(p[11])<<24))
		}
		plains[i] = p
	}
	out := make([]loop.Entry, 0, n)
	var err error
	for i, p := range plains {
		if int64(i) != r.chunks[i].seq {
			return nil, fmt.Sprintf("chunk %d missing", i)
		}
		k := len(out)
		if out, err = decodeChunk(p, out); err != nil {
			return nil, fmt.Sprintf("chunk %d: %v", i, err)
		}
		for j := max(k, 1); j < len(out); j++ {
			if out[j].Seq <= out[j-1].Seq {
				return nil, fmt.Sprintf("chunk %d: entries out of order", i)
			}
		}
		if k > 0 && len(out) > k && out[k].Seq <= out[k-1].Seq {
			return nil, fmt.Sprintf("chunk %d: entries out of order", i)
		}
	}
	switch {
	case int64(len(out)) != r.count:
		return nil, fmt.Sprintf("%d entries projected, %d stored", len(out), r.count)
	case len(out) == 0 || out[len(out)-1].Seq != r.projected:
		return nil, fmt.Sprintf("the projection ends at entry %d, not %d", lastSeqOf(out), r.projected)
	}
	return out, ""
}

func lastSeqOf(es []loop.Entry) int64 {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

// Rebuilding: the chunks are made from the head read (outside the write), and written
// only if the session's transcript is still what was read: the same number of rows, the
// same last one.
const (
	qTranscriptLast  = `SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM entries INDEXED BY entries_transcript WHERE session = ? AND kind <> 'event'`
	qTranscriptBody  = `SELECT body FROM entries WHERE session = ? AND seq = ?`
	qTranscriptWrite = `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES (?, ?, ?, ?)`
)

var errTranscriptMoved = errors.New("the session changed since it was read")

func (s *SQLite) rebuildTranscript(ctx context.Context, session string, h loop.SessionHead, r headRows) error {
	if len(r.more) == 0 || len(r.more) != len(h.Transcript) {
		return nil // not a whole read
	}
	chunks, err := buildChunks(h.Transcript)
	if err != nil {
		return err
	}
	lastRow := r.more[len(r.more)-1]
	return s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var n, last int64
		if err := tx.QueryRowContext(ctx, qTranscriptLast, session).Scan(&n, &last); err != nil {
			return err
		}
		var body []byte
		if n != int64(len(h.Transcript)) || last != lastRow.seq {
			return errTranscriptMoved
		}
		if err := tx.QueryRowContext(ctx, qTranscriptBody, session, last).Scan(&body); err != nil {
			return err
		}
		if !bytes.Equal(body, lastRow.body) {
			return errTranscriptMoved
		}
		if _, err := tx.ExecContext(ctx, qTranscriptDrop, session); err != nil {
			return err
		}
		for i, c := range chunks {
			sealed := s.keys.Seal(c.body, transcriptAAD(session, int64(i)))
			if _, err := tx.ExecContext(ctx, qTranscriptWrite, session, int64(i), c.last, sealed); err != nil {
				return err
			}
		}
		return nil
	})
}

type builtChunk struct {
	last int64
	body []byte
}

// buildChunks encodes a transcript as its appends would have, one entry an append.
func buildChunks(tr []loop.Entry) ([]builtChunk, error) {
	var out []builtChunk
	var add []byte
	var n counts
	flush := func(last int64) error {
		body, err := appendChunk(nil, add, n)
		out, add, n = append(out, builtChunk{last, body}), nil, counts{}
		return err
	}
	for i := range tr {
		p := projectOf(&tr[i])
		if p.err != nil {
			return nil, p.err
		}
		if add != nil && chunkHeader+len(add)+len(p.b) > chunkMax {
			if err := flush(tr[i-1].Seq); err != nil {
				return nil, err
			}
		}
		add = append(add, p.b...)
		for j := range n {
			n[j] += p.n[j]
		}
	}
	if add != nil {
		if err := flush(tr[len(tr)-1].Seq); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *SQLite) logger() *slog.Logger {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.log
}
