package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	// Note is what the run's caller attached to its end (RunWrite.SetNote), kept with
	// the record by a RunNoter and given back by its Runs: a workflow step's end, stored
	// in its call's run (workflow/fold.go). Never shown: no surface encodes it.
	Note string `json:"-"`
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

// KVLister is an optional SessionStore extension: a store that lists the keys of one
// plugin's key/value namespace that start with prefix, sorted, at most limit of them.
// The host lists stored workflow runs with it; plugins never get it.
type KVLister interface {
	KVKeys(ctx context.Context, plugin, prefix string, limit int) ([]string, error)
}

// RunAppender is an optional SessionStore extension: a store that saves a run record
// (as SaveRun does) and appends entries to the run's session in one transaction. A run
// then writes its start and its end with its steps' appends instead of on their own.
// Without it the loop calls SaveRun, then Append. A store that is also a Leaser
// releases, with a final record (Status set), the lease the run holds on its session
// (the one whose RunID is the record's), in the same transaction: the run's end is then
// one write, not two.
type RunAppender interface {
	AppendRun(ctx context.Context, run RunRecord, entries ...Entry) error
}

// MemoryStore is a SessionStore in memory, safe for concurrent use. What Load and
// LoadHead return is shared with the store, never copied (entries are append-only): a
// caller must not change it.
type MemoryStore struct {
	mu       sync.Mutex
	sessions map[string][]Entry
	heads    map[string]SessionHead // kept as entries are appended (LoadHead)
	runs     map[string][]RunRecord
	kv       map[string][]byte
	leases   map[string]Lease
	updated  map[string]time.Time
	feedback []Feedback
	attach   map[string]map[string]Attachment // session → sha256 → attachment
}

var (
	_ SessionStore    = (*MemoryStore)(nil)
	_ Leaser          = (*MemoryStore)(nil)
	_ SessionLister   = (*MemoryStore)(nil)
	_ HeadLoader      = (*MemoryStore)(nil)
	_ AttachmentStore = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		sessions: map[string][]Entry{},
		heads:    map[string]SessionHead{},
		runs:     map[string][]RunRecord{},
		kv:       map[string][]byte{},
		leases:   map[string]Lease{},
		updated:  map[string]time.Time{},
	}
}

func (s *MemoryStore) Append(ctx context.Context, id string, entries ...Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fenceLocked(ctx, id); err != nil {
		return err
	}
	have := s.sessions[id]
	for i, e := range entries {
		if want := int64(len(have) + i + 1); e.Seq != want {
			return fmt.Errorf("session %q: append seq %d, want %d (another run writing?)", id, e.Seq, want)
		}
	}
	s.sessions[id] = append(have, entries...)
	if len(entries) > 0 {
		s.updated[id] = entries[len(entries)-1].Time
		h := s.heads[id]
		for _, e := range entries {
			h.LastSeq = e.Seq
			switch {
			case e.Kind == EntryMessage || e.Kind == EntryCompaction:
				h.Transcript = append(h.Transcript, e)
			case e.Kind == EntryEvent && e.Event != nil:
				h.LastEventSeq = e.Event.Seq
			}
		}
		s.heads[id] = h
	}
	return nil
}

// Load returns the session's entries, shared with the store (read only).
func (s *MemoryStore) Load(_ context.Context, id string) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.sessions[id]
	return es[:len(es):len(es)], nil
}

// LoadHead implements HeadLoader: the head kept as entries were appended, shared with
// the store (read only).
func (s *MemoryStore) LoadHead(_ context.Context, id string) (SessionHead, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.heads[id]
	h.Transcript = h.Transcript[:len(h.Transcript):len(h.Transcript)]
	return h, nil
}

func (s *MemoryStore) SaveRun(ctx context.Context, r RunRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fenceLocked(ctx, r.SessionID); err != nil {
		return err
	}
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

// Sessions lists the stored sessions, most recently updated first.
func (s *MemoryStore) Sessions(context.Context) ([]SessionInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for id, es := range s.sessions {
		out = append(out, SessionInfo{ID: id, Entries: int64(len(es)), Runs: int64(len(s.runs[id])), Updated: s.updated[id]})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// fenceLocked refuses a write whose fence (fence.go) is not the session's lease.
func (s *MemoryStore) fenceLocked(ctx context.Context, session string) error {
	if f, fenced := FenceOf(ctx, session); fenced {
		if held, ok := s.leases[session]; !ok || !held.Same(f) {
			return FenceError(f, held, ok)
		}
	}
	return nil
}

// AcquireLease implements Leaser.
func (s *MemoryStore) AcquireLease(_ context.Context, l Lease, alive func(Lease) bool) (Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, ok := s.leases[l.SessionID]
	if ok && !held.Same(l) && alive(held) {
		return held, ErrSessionBusy
	}
	s.leases[l.SessionID] = l
	return held, nil
}

// RenewLease implements Leaser.
func (s *MemoryStore) RenewLease(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.leases[l.SessionID]; !ok || !held.Same(l) {
		return ErrLeaseLost
	}
	s.leases[l.SessionID] = l
	return nil
}

// ReleaseLease implements Leaser.
func (s *MemoryStore) ReleaseLease(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.leases[l.SessionID]; !ok || !held.Same(l) {
		return ErrLeaseLost
	}
	delete(s.leases, l.SessionID)
	return nil
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

// KVKeys lists a plugin's keys that start with prefix (KVLister).
func (s *MemoryStore) KVKeys(_ context.Context, plugin, prefix string, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.kv {
		p, key, _ := strings.Cut(k, "\x00")
		if p == plugin && strings.HasPrefix(key, prefix) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DeleteSession removes a session's entries and runs (SessionDeleter).
func (s *MemoryStore) DeleteSession(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.leases[id]; held {
		return fmt.Errorf("session %q: %w", id, ErrSessionBusy)
	}
	delete(s.sessions, id)
	delete(s.heads, id)
	delete(s.runs, id)
	delete(s.attach, id)
	s.feedback = slices.DeleteFunc(s.feedback, func(f Feedback) bool { return f.SessionID == id })
	return nil
}
