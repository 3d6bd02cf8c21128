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

// qHead reads what a run starts from (loop.SessionHead), after seq $2: the session's
// message and compaction entries (the partial index entries_transcript holds their
// rows) and its last event, in seq order, in one statement (one snapshot). The other
// events are neither sent nor decoded. qHeadSince adds the anchor of a cached head
// (store.HeadCache): the row at its last seq, with a NULL body, when it still holds the
// same value.
const (
	qHead = `SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind <> 'event'
UNION ALL
(SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
ORDER BY seq`
	qHeadSince = `SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind <> 'event'
UNION ALL
(SELECT seq, body FROM entries WHERE session = $1 AND seq > $2 AND kind = 'event' ORDER BY seq DESC LIMIT 1)
UNION ALL
SELECT seq, NULL FROM entries WHERE session = $1 AND seq = $2 AND body = $3::jsonb
ORDER BY seq`
)

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
	h, _, err := s.loadHead(ctx, session, store.HeadSnapshot{})
	return h, err
}

func (s *Store) loadHead(ctx context.Context, session string, from store.HeadSnapshot) (loop.SessionHead, bool, error) {
	since := from.Head.LastSeq
	q, args := qHead, []any{session, since}
	if since > 0 {
		q, args = qHeadSince, append(args, string(from.Anchor))
	}
	rows, err := s.pool.Query(ctx, q, args...)
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
		if since > 0 && seq == since {
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
	body, err := s.keys.Open(stored, seal.EntryAAD(session, seq))
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
