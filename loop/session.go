package loop

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// EntryKind says what a session entry holds.
type EntryKind string

const (
	EntryMessage    EntryKind = "message"
	EntryCompaction EntryKind = "compaction"
	EntryEvent      EntryKind = "event"
)

// Entry is one append-only record of a session. Seq is 1-based and gapless within a
// session; the loop assigns it, and a store must refuse a Seq it already holds, which
// is how two runs writing one session at once are caught.
type Entry struct {
	Seq        int64       `json:"seq"`
	RunID      string      `json:"run_id"`
	Time       time.Time   `json:"time"`
	Kind       EntryKind   `json:"kind"`
	Message    *Message    `json:"message,omitempty"`
	Compaction *Compaction `json:"compaction,omitempty"`
	Event      *Event      `json:"event,omitempty"`
}

// RunRecord is a run's summary row.
type RunRecord struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Status    Status    `json:"status"` // "" while running
	Reason    Reason    `json:"reason"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Usage     Usage     `json:"usage"`
}

// SessionStore keeps sessions. Appends are ordered and atomic per call; a failed append
// fails the run, so what is stored is always a prefix of what happened.
type SessionStore interface {
	Append(ctx context.Context, sessionID string, entries ...Entry) error
	Load(ctx context.Context, sessionID string) ([]Entry, error)
	SaveRun(ctx context.Context, run RunRecord) error
	Runs(ctx context.Context, sessionID string) ([]RunRecord, error)
	KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error)
	KVSet(ctx context.Context, plugin, key string, value []byte) error
}

// MemoryStore is a SessionStore in memory, safe for concurrent use.
type MemoryStore struct {
	mu       sync.Mutex
	sessions map[string][]Entry
	runs     map[string][]RunRecord
	kv       map[string][]byte
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		sessions: map[string][]Entry{},
		runs:     map[string][]RunRecord{},
		kv:       map[string][]byte{},
	}
}

func (s *MemoryStore) Append(_ context.Context, id string, entries ...Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	have := s.sessions[id]
	for i, e := range entries {
		if want := int64(len(have) + i + 1); e.Seq != want {
			return fmt.Errorf("session %q: append seq %d, want %d (another run writing?)", id, e.Seq, want)
		}
	}
	s.sessions[id] = append(have, entries...)
	return nil
}

func (s *MemoryStore) Load(_ context.Context, id string) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.sessions[id]...), nil
}

func (s *MemoryStore) SaveRun(_ context.Context, r RunRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := s.runs[r.SessionID]
	for i := range runs {
		if runs[i].ID == r.ID {
			runs[i] = r
			return nil
		}
	}
	s.runs[r.SessionID] = append(runs, r)
	return nil
}

func (s *MemoryStore) Runs(_ context.Context, id string) ([]RunRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RunRecord(nil), s.runs[id]...), nil
}

// Sessions lists the ids of stored sessions.
func (s *MemoryStore) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		out = append(out, id)
	}
	return out
}

func (s *MemoryStore) KVGet(_ context.Context, plugin, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[plugin+"\x00"+key]
	return append([]byte(nil), v...), ok, nil
}

func (s *MemoryStore) KVSet(_ context.Context, plugin, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv[plugin+"\x00"+key] = append([]byte(nil), value...)
	return nil
}
