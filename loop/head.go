package loop

import (
	"context"
	"fmt"
)

// SessionHead is what a run starts from: the session's transcript entries and where its
// two numberings stand. A run reads no event of its session but the last one's seq, so
// what it loads does not grow with the events its session has stored (80% of a session's
// entries): events are read only by what shows them (SessionStore.Load).
type SessionHead struct {
	// Transcript is the session's message and compaction entries, in seq order. A store
	// may share it with others (HeadLoader): the caller must not change it or its
	// entries.
	Transcript []Entry
	// LastSeq is the seq of the session's last entry (of any kind), 0 for none.
	LastSeq int64
	// LastEventSeq is the Event.Seq of the session's last stored event, 0 for none: a
	// run's events continue from it (L17).
	LastEventSeq int64
	// Messages, when a store sets it, is the message of every Transcript entry, in order
	// (Transcript then holds no compaction), in one array whose room past its length is
	// the caller's: a run's model input is a slice of it, not a copy (a first read of a
	// long session decodes them into one array anyway). A store sets it only on a head it
	// has just read and hands out once (a cold read), never on one it shares (a cached
	// head): two holders appending past its length would write into each other's.
	Messages []Message
}

// HeadLoader is an optional SessionStore extension: a store that loads a session's head
// without decoding its events. What it returns must be what HeadOf makes of the store's
// Load, read at one point of the session's history (the conformance suite,
// store/storetest, checks both on every store).
type HeadLoader interface {
	LoadHead(ctx context.Context, sessionID string) (SessionHead, error)
}

// LoadHead loads a session's head: with the store's LoadHead when it has one, else from
// Load. Every run starts here.
func LoadHead(ctx context.Context, st SessionStore, session string) (SessionHead, error) {
	if hl, ok := st.(HeadLoader); ok {
		h, err := hl.LoadHead(ctx, session)
		if err != nil {
			return SessionHead{}, err
		}
		return h, nil
	}
	entries, err := st.Load(ctx, session)
	if err != nil {
		return SessionHead{}, err
	}
	return HeadOf(entries), nil
}

// HeadOf is the head of a session whose entries are these (in seq order): the
// definition every HeadLoader matches.
func HeadOf(entries []Entry) SessionHead {
	var h SessionHead
	n := 0
	for _, e := range entries {
		if e.Kind == EntryMessage || e.Kind == EntryCompaction {
			n++
		}
	}
	if n > 0 {
		h.Transcript = make([]Entry, 0, n)
	}
	for _, e := range entries {
		h.LastSeq = e.Seq
		switch e.Kind {
		case EntryMessage, EntryCompaction:
			h.Transcript = append(h.Transcript, e)
		case EntryEvent:
			if e.Event != nil {
				h.LastEventSeq = e.Event.Seq
			}
		}
	}
	return h
}

// loadHead is the run's LoadHead, its error naming the session. A head the store read
// with the claim state (ClaimState.Head) is used, once, instead of a second read.
func (r *run) loadHead() (SessionHead, error) {
	if c := r.journal.claim; c != nil && c.head != nil {
		h := *c.head
		c.head = nil
		return h, nil
	}
	h, err := LoadHead(r.ctx, r.cfg.Store, r.in.SessionID)
	if err != nil {
		return SessionHead{}, fmt.Errorf("load session %q: %w", r.in.SessionID, err)
	}
	return h, nil
}
