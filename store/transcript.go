package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/agenthost/agenthost/loop"
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
	// The last chunk, its body only if the append fits in it (as stored, sealed or not).
	qTranscriptTail = `SELECT chunk, CASE WHEN length(body) + ? <= ? THEN body END FROM transcripts WHERE session = ? ORDER BY chunk DESC LIMIT 1`
	qTranscriptPut  = `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES (?, ?, ?, ?)
		ON CONFLICT (session, chunk) DO UPDATE SET last_seq = excluded.last_seq, body = excluded.body`
	qTranscriptDrop = `DELETE FROM transcripts WHERE session = ?`
	qHasTranscript  = `SELECT EXISTS (SELECT 1 FROM entries INDEXED BY entries_transcript WHERE session = ? AND kind <> 'event' AND seq <= ?)`
)

// appendTranscriptTx adds an append's transcript entries to its session's projection, in
// the append's transaction, after its rows (last: the session's seq before them). A
// session with entries but no projection gets none here (a read rebuilds it whole), and
// a projection that does not open or decode is dropped (likewise).
func (w *writer) appendTranscriptTx(ctx context.Context, tx *wtx, session string, last int64, es []encoded) error {
	var add encodedEntry
	var n counts
	var lastSeq int64
	nf, nt := 0, 0
	for _, e := range es {
		nf, nt = nf+len(e.tr.p.fields), nt+len(e.tr.p.text)
	}
	if nf > 0 {
		add.fields, add.text = make([]byte, 0, nf), make([]byte, 0, nt)
	}
	for _, e := range es {
		if e.tr.err != nil {
			_, err := tx.ExecContext(ctx, qTranscriptDrop, session)
			return err
		}
		if e.tr.p.fields != nil {
			add.fields = append(add.fields, e.tr.p.fields...)
			add.text = append(add.text, e.tr.p.text...)
			for i := range n {
				n[i] += e.tr.n[i]
			}
			lastSeq = e.seq
		}
	}
	if add.fields == nil {
		return nil
	}
	var chunk int64
	var stored []byte
	err := tx.QueryRowContext(ctx, qTranscriptTail, len(add.fields)+len(add.text), chunkMax, session).Scan(&chunk, &stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if last > 0 {
			var has bool
			if err := tx.QueryRowContext(ctx, qHasTranscript, session, last).Scan(&has); err != nil || has {
				return err
			}
		}
	case err != nil:
		return err
	case stored == nil: // full
		chunk++
	default:
		plain, err := w.keys.Open(stored, transcriptAAD(session, chunk))
		if err != nil {
			_, err = tx.ExecContext(ctx, qTranscriptDrop, session)
			return err
		}
		stored = plain
	}
	body, err := appendChunk(stored, add, n)
	if err != nil {
		_, err = tx.ExecContext(ctx, qTranscriptDrop, session)
		return err
	}
	_, err = tx.ExecContext(ctx, qTranscriptPut, session, chunk, lastSeq, w.keys.Seal(body, transcriptAAD(session, chunk)))
	return err
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
