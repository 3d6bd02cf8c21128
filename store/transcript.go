package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
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
// lagging them by fewer than lagMin transcript entries,
// deleted with any entry of its session deleted or changed (two triggers: a deleted
// session, a reseal, a migration that rewrites bodies), and checked against the entries
// at every read (the transcript's row count and last seq); where it is absent or
// disagrees, the head is read from the entries and the projection rebuilt from them.
// Its chunks are sealed as entries are (transcriptAAD), so a sealed store keeps no
// message in clear in them.

// chunkMax is the size past which an extension starts a new chunk instead of rewriting
// the last one: an extension rewrites at most this much, and a read of 801 messages
// reads a few dozen rows.
const chunkMax = 4096

// The projection lags its entries: a write extends it only when the transcript entries
// not yet in it (those before the write, and the write's own) reach lagMin, so a short
// session (a one-step run on a new session writes ~5 messages) never touches it, and a
// write that does not extend it pays for nothing but two columns of the read it makes
// anyway (qWriteState: where the projection ends and how many transcript rows follow).
// What is in it is always a prefix of the transcript ending on one of its rows; a read
// takes the rows after it from the entries (qHeadProjected). A session whose pending
// rows reach lagCap (its projection dropped by a trigger, or stored before migration 18)
// is left to the next cold read, which reads it from the entries anyway and rebuilds it.
const (
	lagMin = 16
	lagCap = 64
)

// trWriteState is qWriteState's columns for the projection (k is the session's key):
// the seq its last chunk ends at, and how many transcript rows follow it (up to lagCap).
const (
	trEnd        = `(SELECT last_seq FROM transcripts t WHERE t.sid = k.sid ORDER BY t.chunk DESC LIMIT 1)`
	trWriteState = `COALESCE(` + trEnd + `, 0), (SELECT COUNT(*) FROM (SELECT 1 FROM entries INDEXED BY entries_transcript
		WHERE sid = k.sid AND kind <> 'event' AND seq > COALESCE(` + trEnd + `, 0) LIMIT 64))`
)

// migrateTranscripts is schema migration 18 (after the per-session key, 17): the
// projection's table, keyed by that key, and the triggers that drop a session's
// projection whenever one of its entries is deleted or rewritten. A migration that
// rebuilds the entries table drops its triggers: it must create them again
// (TestTranscriptProjectionIsDroppedWithItsEntries).
func migrateTranscripts(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		`CREATE TABLE transcripts (sid INTEGER NOT NULL, chunk INTEGER NOT NULL, last_seq INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (sid, chunk)) WITHOUT ROWID`,
		`CREATE TRIGGER transcripts_entry_deleted AFTER DELETE ON entries BEGIN DELETE FROM transcripts WHERE sid = OLD.sid; END`,
		`CREATE TRIGGER transcripts_entry_updated AFTER UPDATE ON entries BEGIN DELETE FROM transcripts WHERE sid = OLD.sid; END`,
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

// projected is an entry's projection.
type projected struct {
	p   encodedEntry // nil fields: not a transcript entry
	n   counts
	err error // not projectable: the session's projection is dropped
}

func projectOf(e *loop.Entry) projected {
	if !isTranscript(e) {
		return projected{}
	}
	p, err := projectEntry(*e)
	return projected{p: p, n: countOf(e), err: err}
}

const (
	// The last chunk, its body only if the extension fits in it (as stored, sealed or not).
	qTranscriptTail = `SELECT chunk, CASE WHEN length(body) + ? <= ? THEN body END FROM transcripts WHERE sid = ? ORDER BY chunk DESC LIMIT 1`
	qTranscriptPut  = `INSERT INTO transcripts (sid, chunk, last_seq, body) VALUES (?, ?, ?, ?)
		ON CONFLICT (sid, chunk) DO UPDATE SET last_seq = excluded.last_seq, body = excluded.body`
	qTranscriptDrop = `DELETE FROM transcripts WHERE sid = ?`
	// The transcript rows after the projection's end, up to the write's own.
	qTranscriptPending = `SELECT seq, body FROM entries INDEXED BY entries_transcript WHERE sid = ? AND kind <> 'event' AND seq > ? AND seq <= ? ORDER BY seq`
)

// appendTranscriptTx extends the session's projection in the append's transaction,
// after its rows, when the transcript entries pending (ws.trPending, before the write)
// and the write's own reach lagMin: the pending ones read from their rows and decoded,
// the write's projected from the entries in hand. A projection that does not open or
// decode, or an entry that cannot be projected, drops it (a read rebuilds it).
func (w *writer) appendTranscriptTx(ctx context.Context, tx *wtx, ws writeState, session string, es []encoded) error {
	own := int64(0)
	for i := range es {
		if isTranscript(es[i].src) {
			own++
		}
	}
	if own == 0 || ws.trPending >= lagCap || ws.trPending+own < lagMin {
		return nil
	}
	src := make([]*loop.Entry, 0, ws.trPending+own)
	if ws.trPending > 0 {
		pending, ok, err := w.pendingTx(ctx, tx, ws, session)
		if err != nil || !ok {
			return err
		}
		for i := range pending {
			src = append(src, &pending[i])
		}
	}
	for i := range es {
		if isTranscript(es[i].src) {
			src = append(src, es[i].src)
		}
	}
	var add encodedEntry
	var n counts
	for _, e := range src {
		p := projectOf(e)
		if p.err != nil {
			_, err := tx.ExecContext(ctx, qTranscriptDrop, ws.sid)
			return err
		}
		add.fields = append(add.fields, p.p.fields...)
		add.text = append(add.text, p.p.text...)
		for i := range n {
			n[i] += p.n[i]
		}
	}
	var chunk int64
	var stored []byte
	err := tx.QueryRowContext(ctx, qTranscriptTail, len(add.fields)+len(add.text), chunkMax, ws.sid).Scan(&chunk, &stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case stored == nil: // full
		chunk++
	default:
		plain, err := w.keys.Open(stored, transcriptAAD(session, chunk))
		if err != nil {
			_, err = tx.ExecContext(ctx, qTranscriptDrop, ws.sid)
			return err
		}
		stored = plain
	}
	body, err := appendChunk(stored, add, n)
	if err != nil {
		_, err = tx.ExecContext(ctx, qTranscriptDrop, ws.sid)
		return err
	}
	_, err = tx.ExecContext(ctx, qTranscriptPut, ws.sid, chunk, src[len(src)-1].Seq, w.keys.Seal(body, transcriptAAD(session, chunk)))
	return err
}

// pendingTx reads and decodes the session's transcript rows after its projection and
// before the write (at most lagCap of them). A row that does not open or decode is not
// the write's to fail on (ok false: the projection is not extended; a read reports it).
func (w *writer) pendingTx(ctx context.Context, tx *wtx, ws writeState, session string) (es []loop.Entry, ok bool, err error) {
	rows, err := tx.QueryContext(ctx, qTranscriptPending, ws.sid, ws.trEnd, ws.last)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out := make([]loop.Entry, 0, ws.trPending)
	ok = true
	for rows.Next() {
		var seq int64
		var stored []byte
		if err := rows.Scan(&seq, &stored); err != nil {
			return nil, false, err
		}
		body, err := w.keys.Open(stored, seal.EntryAAD(session, seq))
		if err != nil {
			ok = false
			continue
		}
		e, err := decodeEntry(seq, body)
		if err != nil {
			ok = false
			continue
		}
		out = append(out, e)
	}
	return out, ok, rows.Err()
}

// Rebuilding: the chunks are made from the head read (outside the write), and written
// only if the session's transcript is still what was read: the same number of rows, the
// same last one.
const (
	qTranscriptSid   = `SELECT sid FROM session_keys WHERE id = ?`
	qTranscriptLast  = `SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM entries INDEXED BY entries_transcript WHERE sid = ? AND kind <> 'event'`
	qTranscriptBody  = `SELECT body FROM entries WHERE sid = ? AND seq = ?`
	qTranscriptWrite = `INSERT INTO transcripts (sid, chunk, last_seq, body) VALUES (?, ?, ?, ?)`
)

var errTranscriptMoved = errors.New("the session changed since it was read")

func (s *SQLite) rebuildTranscript(ctx context.Context, session string, h loop.SessionHead, more []headRow) error {
	if len(more) == 0 || len(more) != len(h.Transcript) {
		return nil // not a whole read
	}
	chunks, err := buildChunks(h.Transcript)
	if err != nil {
		return err
	}
	lastRow := more[len(more)-1]
	return s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var sid, n, last int64
		if err := tx.QueryRowContext(ctx, qTranscriptSid, session).Scan(&sid); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, qTranscriptLast, sid).Scan(&n, &last); err != nil {
			return err
		}
		var body []byte
		if n != int64(len(h.Transcript)) || last != lastRow.seq {
			return errTranscriptMoved
		}
		if err := tx.QueryRowContext(ctx, qTranscriptBody, sid, last).Scan(&body); err != nil {
			return err
		}
		if !bytes.Equal(body, lastRow.body) {
			return errTranscriptMoved
		}
		if _, err := tx.ExecContext(ctx, qTranscriptDrop, sid); err != nil {
			return err
		}
		for i, c := range chunks {
			sealed := s.keys.Seal(c.body, transcriptAAD(session, int64(i)))
			if _, err := tx.ExecContext(ctx, qTranscriptWrite, sid, int64(i), c.last, sealed); err != nil {
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
	var add encodedEntry
	var n counts
	flush := func(last int64) error {
		body, err := appendChunk(nil, add, n)
		out, add, n = append(out, builtChunk{last, body}), encodedEntry{}, counts{}
		return err
	}
	for i := range tr {
		p := projectOf(&tr[i])
		if p.err != nil {
			return nil, p.err
		}
		if add.fields != nil && chunkHeader+len(add.fields)+len(add.text)+len(p.p.fields)+len(p.p.text) > chunkMax {
			if err := flush(tr[i-1].Seq); err != nil {
				return nil, err
			}
		}
		add.fields = append(add.fields, p.p.fields...)
		add.text = append(add.text, p.p.text...)
		for j := range n {
			n[j] += p.n[j]
		}
	}
	if add.fields != nil {
		if err := flush(tr[len(tr)-1].Seq); err != nil {
			return nil, err
		}
	}
	return out, nil
}
