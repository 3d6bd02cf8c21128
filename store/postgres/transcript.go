package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
)

// The transcript projection, as the SQLite store keeps it (store/transcript.go, whose
// codec and rules this one calls through store/transcriptexport.go): a session's
// messages and compactions stored again in chunks of a compact encoding, so that the
// first run on a long session since the process started decodes no JSON for the
// messages it loads (BENCHMARKS.md, "The transcript projection on PostgreSQL"). The
// entries stay the truth (rule L21): the projection is written in the transaction of
// the entries it projects, under the session's advisory lock (appendTx), lagging them by
// fewer than TranscriptLagMin transcript entries; deleted with any entry of its session
// deleted or rewritten (the triggers of migrateTranscripts: DeleteSession, Reseal, a
// migration, anything that touches the rows); and checked at every read against the
// entries (transcriptread.go). Where it is absent or disagrees, the head is read from
// the entries and the projection rebuilt from them. Its chunks are sealed as entries
// are (store.TranscriptAAD), so a sealed store keeps no message in clear in them.

// migrateTranscripts is schema migration 15: the projection's table and the triggers
// that drop a session's projection when any of its entries is deleted, updated or
// truncated away. They are statement triggers: a session's deletion runs one DELETE on
// the projection, not one per entry.
const migrateTranscripts = `
CREATE TABLE transcripts (
	session  TEXT    NOT NULL,
	chunk    INTEGER NOT NULL,
	last_seq BIGINT  NOT NULL,
	body     BYTEA   NOT NULL,
	PRIMARY KEY (session, chunk)
);
CREATE FUNCTION agenthost_transcripts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM transcripts WHERE session IN (SELECT session FROM gone);
	RETURN NULL;
END $$;
CREATE FUNCTION agenthost_transcripts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM transcripts WHERE session IN (SELECT session FROM gone UNION SELECT session FROM came);
	RETURN NULL;
END $$;
CREATE FUNCTION agenthost_transcripts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM transcripts;
	RETURN NULL;
END $$;
CREATE TRIGGER transcripts_entry_deleted AFTER DELETE ON entries REFERENCING OLD TABLE AS gone
	FOR EACH STATEMENT EXECUTE FUNCTION agenthost_transcripts_deleted();
CREATE TRIGGER transcripts_entry_updated AFTER UPDATE ON entries REFERENCING OLD TABLE AS gone NEW TABLE AS came
	FOR EACH STATEMENT EXECUTE FUNCTION agenthost_transcripts_updated();
CREATE TRIGGER transcripts_entries_truncated AFTER TRUNCATE ON entries
	FOR EACH STATEMENT EXECUTE FUNCTION agenthost_transcripts_truncated();`

// writeState is where a session stands when an append starts (under its lock): its last
// seq, the seq its projection ends at (0: none) and how many transcript rows follow
// that (counted up to TranscriptLagCap).
type writeState struct{ last, trEnd, trPending int64 }

const (
	qLastSeq = `SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session = $1`
	// qWriteState is qLastSeq with the projection's two columns, for an append that
	// holds transcript entries (one that holds none cannot extend it).
	qWriteState = `SELECT (SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session = $1), t.e,
	(SELECT COUNT(*) FROM (SELECT 1 FROM entries WHERE session = $1 AND kind <> 'event' AND seq > t.e LIMIT $2) p)
FROM (SELECT COALESCE((SELECT last_seq FROM transcripts WHERE session = $1 ORDER BY chunk DESC LIMIT 1), 0) AS e) t`
	// The transcript rows after the projection's end and before the append's own.
	qTranscriptPending = `SELECT seq, body FROM entries WHERE session = $1 AND kind <> 'event' AND seq > $2 AND seq <= $3 ORDER BY seq`
	// The last chunk, its body only if the extension fits in it (as stored, sealed or not).
	qTranscriptTail = `SELECT chunk, CASE WHEN length(body) + $2 <= $3 THEN body END FROM transcripts WHERE session = $1 ORDER BY chunk DESC LIMIT 1`
	qTranscriptPut  = `INSERT INTO transcripts (session, chunk, last_seq, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (session, chunk) DO UPDATE SET last_seq = excluded.last_seq, body = excluded.body`
	qTranscriptDrop = `DELETE FROM transcripts WHERE session = $1`
)

func readWriteState(ctx context.Context, tx pgx.Tx, session string, own int) (writeState, error) {
	var ws writeState
	if own == 0 {
		return ws, tx.QueryRow(ctx, qLastSeq, session).Scan(&ws.last)
	}
	return ws, tx.QueryRow(ctx, qWriteState, session, store.TranscriptLagCap).Scan(&ws.last, &ws.trEnd, &ws.trPending)
}

func transcriptCount(es []loop.Entry) int {
	n := 0
	for i := range es {
		if store.IsTranscript(&es[i]) {
			n++
		}
	}
	return n
}

// extendTranscriptTx extends the session's projection in the append's transaction,
// after its rows, when the transcript entries pending (ws.trPending, before the append)
// and the append's own reach TranscriptLagMin: the pending ones read from their rows and
// decoded, the append's projected from the entries in hand. A projection that does not
// open or decode, or an entry that cannot be projected, drops it (a read rebuilds it).
func extendTranscriptTx(ctx context.Context, tx pgx.Tx, keys *seal.Keys, session string, ws writeState, es []loop.Entry, own int) error {
	if own == 0 || ws.trPending >= store.TranscriptLagCap || ws.trPending+int64(own) < store.TranscriptLagMin {
		return nil
	}
	var add store.TranscriptAddition
	if ws.trPending > 0 {
		ok, err := addPendingTx(ctx, tx, keys, session, ws, &add)
		if err != nil || !ok {
			return err
		}
	}
	for i := range es {
		if store.IsTranscript(&es[i]) {
			if err := add.Add(&es[i]); err != nil {
				return dropTranscriptTx(ctx, tx, session)
			}
		}
	}
	var chunk int64
	var stored []byte
	err := tx.QueryRow(ctx, qTranscriptTail, session, add.Size(), store.TranscriptChunkMax).Scan(&chunk, &stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return err
	case stored == nil: // full
		chunk++
	default:
		if stored, err = keys.Open(stored, store.TranscriptAAD(session, chunk)); err != nil {
			return dropTranscriptTx(ctx, tx, session)
		}
	}
	body, err := add.AppendTo(stored)
	if err != nil {
		return dropTranscriptTx(ctx, tx, session)
	}
	_, err = tx.Exec(ctx, qTranscriptPut, session, chunk, add.Last(), keys.Seal(body, store.TranscriptAAD(session, chunk)))
	return err
}

// addPendingTx reads, decodes and adds the session's transcript rows after its
// projection and before the append (at most TranscriptLagCap of them). A row that does
// not open or decode is not the append's to fail on (ok false: the projection is not
// extended; a read reports the row).
func addPendingTx(ctx context.Context, tx pgx.Tx, keys *seal.Keys, session string, ws writeState, add *store.TranscriptAddition) (ok bool, err error) {
	rows, err := tx.Query(ctx, qTranscriptPending, session, ws.trEnd, ws.last)
	if err != nil {
		return false, err
	}
	var pending []loop.Entry
	ok = true
	for rows.Next() {
		var seq int64
		var stored []byte
		if err := rows.Scan(&seq, &stored); err != nil {
			rows.Close()
			return false, err
		}
		e, err := openEntry(keys, session, seq, stored)
		if err != nil {
			ok = false
			continue
		}
		pending = append(pending, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil || !ok {
		return false, err
	}
	for i := range pending {
		if err := add.Add(&pending[i]); err != nil {
			return false, dropTranscriptTx(ctx, tx, session)
		}
	}
	return true, nil
}

func dropTranscriptTx(ctx context.Context, tx pgx.Tx, session string) error {
	_, err := tx.Exec(ctx, qTranscriptDrop, session)
	return err
}

var errTranscriptMoved = errors.New("the session changed since it was read")

// qTranscriptSame reads, under the session's lock, whether its transcript is still the
// one a rebuild read: as many rows, the same last one holding the same value.
const qTranscriptSame = `SELECT COUNT(*), COALESCE(MAX(seq), 0),
	COALESCE((SELECT body = $3::jsonb FROM entries WHERE session = $1 AND seq = $2), false)
FROM entries WHERE session = $1 AND kind <> 'event'`

// rebuildTranscript writes the projection of a transcript read whole (tr, whose last row
// is last), in a transaction that holds the session's lock (appends wait for it) and
// writes only if the transcript is still what was read.
func (s *Store) rebuildTranscript(ctx context.Context, session string, tr []loop.Entry, last headRow) error {
	if len(tr) == 0 || tr[len(tr)-1].Seq != last.seq {
		return nil // not a whole read
	}
	chunks, err := store.BuildTranscriptChunks(tr)
	if err != nil {
		return err
	}
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		rows[i] = []any{session, int32(i), c.Last, s.keys.Seal(c.Body, store.TranscriptAAD(session, int64(i)))}
	}
	return s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, session); err != nil {
			return err
		}
		var n, lastSeq int64
		var same bool
		if err := tx.QueryRow(ctx, qTranscriptSame, session, last.seq, string(last.body)).Scan(&n, &lastSeq, &same); err != nil {
			return err
		}
		if n != int64(len(tr)) || lastSeq != last.seq || !same {
			return errTranscriptMoved
		}
		if err := dropTranscriptTx(ctx, tx, session); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"transcripts"}, []string{"session", "chunk", "last_seq", "body"}, pgx.CopyFromRows(rows))
		return err
	})
}

// rebuild is rebuildTranscript, its failure only reported (the head was read anyway).
func (s *Store) rebuild(ctx context.Context, session string, tr []loop.Entry, last headRow) {
	if err := s.rebuildTranscript(ctx, session, tr, last); err != nil {
		s.logger().Warn("store: the transcript projection was not rebuilt", "session", session, "err", err)
	}
}

// dropStaleTranscripts deletes the chunks not sealed with the current key (Reseal's end:
// no message stays under a retired key in the projection; a read rebuilds them).
func (s *Store) dropStaleTranscripts(ctx context.Context) error {
	prefix := `"` + seal.Prefix + s.keys.Current() + ":" // how every value sealed with it starts (seal.Sealed)
	_, err := s.db.Exec(ctx, `DELETE FROM transcripts WHERE substring(body from 1 for $1) <> $2::bytea`, len(prefix), []byte(prefix))
	return err
}
