package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.HeadLoader = (*SQLite)(nil)

// qHead reads what a run starts from (loop.SessionHead): the session's message and
// compaction entries and its last event, in seq order, in one statement (one snapshot).
// The other events' bodies are neither read into Go nor decoded: the partial index
// entries_transcript (migrateV12TranscriptIndex) holds the transcript's rows, so
// SQLite does not step over the events either, and the last event is found from the
// end of the session's rows.
const qHead = `SELECT seq, body FROM entries INDEXED BY entries_transcript WHERE session = ? AND kind <> 'event'
UNION ALL
SELECT seq, body FROM (SELECT seq, body FROM entries WHERE session = ? AND kind = 'event' ORDER BY seq DESC LIMIT 1)
ORDER BY seq`

// LoadHead implements loop.HeadLoader: the session's transcript and where its
// numberings stand, without its events.
func (s *SQLite) LoadHead(ctx context.Context, session string) (loop.SessionHead, error) {
	if err := s.watch.check(); err != nil {
		return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
	}
	rows, err := s.query(ctx, qHead, session, session)
	if err != nil {
		return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
	}
	defer rows.Close()
	var h loop.SessionHead
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
		}
		if body, err = s.keys.Open(body, seal.EntryAAD(session, seq)); err != nil {
			return loop.SessionHead{}, fmt.Errorf("load session %q: entry %d: %w", session, seq, err)
		}
		e, err := decodeEntry(seq, body)
		if err != nil {
			return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
		}
		addToHead(&h, e)
	}
	if err := rows.Err(); err != nil {
		return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
	}
	return h, nil
}

// addToHead adds an entry a head query returned, in seq order.
func addToHead(h *loop.SessionHead, e loop.Entry) {
	h.LastSeq = e.Seq
	if e.Kind == loop.EntryEvent {
		h.LastEventSeq = e.Event.Seq
		return
	}
	h.Transcript = append(h.Transcript, e)
}

// migrateV12TranscriptIndex indexes the rows of a session's transcript (its messages
// and compactions, a fifth of its entries) so a run's start reads them without stepping
// over the events (qHead).
func migrateV12TranscriptIndex(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `CREATE INDEX entries_transcript ON entries (session, seq) WHERE kind <> 'event'`)
	return err
}
