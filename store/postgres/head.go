package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.HeadLoader = (*Store)(nil)

// qHeadSince reads what a run starts from (loop.SessionHead) after a cached head
// (store.HeadCache) whose last seq is $2: the session's message and compaction entries
// after it (the partial index entries_transcript holds their rows), its last event
// after it, and the cached head's anchor: the row at $2, with a NULL body, when it
// still holds the same value; in seq order, in one statement (one snapshot). The other
// events are neither sent nor decoded. A session no head is kept of is read cold, from
// its transcript projection (transcriptread.go).
const qHeadSince = `SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind <> 'event'
UNION ALL
(SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
UNION ALL
SELECT seq, NULL FROM entries WHERE session = $1 AND seq = $2 AND body = $3::jsonb
ORDER BY seq`

// LoadHead implements loop.HeadLoader: the session's transcript and where its
// numberings stand, without its events; of a session loaded before, only what was
// appended since is read (store.HeadCache).
func (s *Store) LoadHead(ctx context.Context, session string) (loop.SessionHead, error) {
	if snap, ok := s.heads.Get(session); ok {
		h, anchored, err := s.loadHead(ctx, session, snap)
		if err != nil || anchored {
			return h, err
		}
		s.heads.Drop(session) // not the session cached: read it whole
	}
	return s.loadHeadCold(ctx, session)
}

// loadHead reads the rows after a cached head (from); false when its anchor did not hold.
func (s *Store) loadHead(ctx context.Context, session string, from store.HeadSnapshot) (loop.SessionHead, bool, error) {
	since := from.Head.LastSeq
	rows, err := s.db.Query(ctx, qHeadSince, session, since, string(from.Anchor))
	if err != nil {
		return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
	}
	defer rows.Close()
	r := store.NewHeadRead(from)
	for rows.Next() {
		var seq int64
		var stored []byte
		if err := rows.Scan(&seq, &stored); err != nil {
			return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
		}
		if seq == since {
			r.Anchored()
			continue
		}
		e, err := s.decodeEntry(session, seq, stored)
		if err != nil {
			return loop.SessionHead{}, false, err
		}
		r.Add(e, stored)
	}
	if err := rows.Err(); err != nil {
		return loop.SessionHead{}, false, fmt.Errorf("load session %q: %w", session, err)
	}
	h, anchored := r.Done(s.heads, session)
	return h, anchored, nil
}

// decodeEntry opens and decodes a stored entry body, checking it against its row.
func (s *Store) decodeEntry(session string, seq int64, stored []byte) (loop.Entry, error) {
	return openEntry(s.keys, session, seq, stored)
}

func openEntry(keys *seal.Keys, session string, seq int64, stored []byte) (loop.Entry, error) {
	body, err := keys.Open(stored, seal.EntryAAD(session, seq))
	if err != nil {
		return loop.Entry{}, fmt.Errorf("load session %q: entry %d: %w", session, seq, err)
	}
	var e loop.Entry
	if err := json.Unmarshal(body, &e); err != nil {
		return loop.Entry{}, fmt.Errorf("load session %q: entry %d is not a valid entry: %w", session, seq, err)
	}
	ok := false
	switch e.Kind {
	case loop.EntryEvent:
		ok = e.Event != nil
	case loop.EntryMessage:
		ok = e.Message != nil
	case loop.EntryCompaction:
		ok = e.Compaction != nil
	}
	switch {
	case e.Seq != seq:
		return loop.Entry{}, fmt.Errorf("load session %q: entry %d says it is %d", session, seq, e.Seq)
	case !ok:
		return loop.Entry{}, fmt.Errorf("load session %q: entry %d: kind %q without its payload", session, seq, e.Kind)
	}
	return e, nil
}
