package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.HeadLoader = (*Store)(nil)

// qHead reads what a run starts from (loop.SessionHead): the session's message and
// compaction entries (the partial index entries_transcript holds their rows) and its
// last event, in seq order, in one statement (one snapshot). The other events are
// neither sent nor decoded.
const qHead = `SELECT seq, body FROM entries WHERE session = $1 AND kind <> 'event'
UNION ALL
(SELECT seq, body FROM entries WHERE session = $1 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
ORDER BY seq`

// LoadHead implements loop.HeadLoader: the session's transcript and where its
// numberings stand, without its events.
func (s *Store) LoadHead(ctx context.Context, session string) (loop.SessionHead, error) {
	rows, err := s.pool.Query(ctx, qHead, session)
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
		var e loop.Entry
		if err := json.Unmarshal(body, &e); err != nil {
			return loop.SessionHead{}, fmt.Errorf("load session %q: entry %d is not a valid entry: %w", session, seq, err)
		}
		if e.Seq != seq {
			return loop.SessionHead{}, fmt.Errorf("load session %q: entry %d says it is %d", session, seq, e.Seq)
		}
		h.LastSeq = seq
		switch {
		case e.Kind == loop.EntryEvent && e.Event != nil:
			h.LastEventSeq = e.Event.Seq
		case e.Kind == loop.EntryMessage && e.Message != nil, e.Kind == loop.EntryCompaction && e.Compaction != nil:
			h.Transcript = append(h.Transcript, e)
		default:
			return loop.SessionHead{}, fmt.Errorf("load session %q: entry %d: kind %q without its payload", session, seq, e.Kind)
		}
	}
	if err := rows.Err(); err != nil {
		return loop.SessionHead{}, fmt.Errorf("load session %q: %w", session, err)
	}
	return h, nil
}
