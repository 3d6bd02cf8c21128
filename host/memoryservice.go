package host

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/redact"
)

// memoryService is the one door to the memories (Host.Memory): the model's tools, the
// recall that puts memories in the system message, the memory plugins' extraction, the
// CLI and the HTTP API all go through it. On the way in, an entry's text and metadata
// pass [redact] when it runs at the input or the store stage (what a user stores is
// their input, and it is stored), then its user's quota, then the embeddings (the
// store below, embeddedMemory, embeds the redacted text); on the way out, what a search
// or a listing returns passes [redact] again, so a memory stored before [redact] was
// set reaches neither the system message nor a client unredacted.
type memoryService struct {
	memory.Store // the store, with embeddings when [memory.embeddings] is set
	redact       *redact.Redactor
	maxCount     int   // 0: no limit
	maxBytes     int64 // 0: no limit
	now          func() time.Time

	mu   sync.Mutex
	used map[string]*memoryUsage // by user: what the store held when counted, plus adds since
}

// memoryUsage is a user's memories as the service counted them: count and bytes as
// stored (when counted, plus the adds since), pending the adds admitted and not yet
// stored, which a count of the store cannot see.
type memoryUsage struct {
	count, pending      int
	bytes, pendingBytes int64
	counted             time.Time
	stale               bool // memories were deleted since: count again
}

// recountAfter is how old a count must be before a refusal counts again: memories
// deleted by another process (the CLI beside serve) are then seen, and a client
// hammering a full quota costs one listing per this much time, not one per attempt.
const recountAfter = 2 * time.Second

// newMemoryService puts the door in front of store; nil store: none.
func (h *Host) newMemoryService(store memory.Store) (*memoryService, error) {
	if store == nil {
		return nil, nil
	}
	s := &memoryService{Store: store, now: time.Now, used: map[string]*memoryUsage{}}
	s.maxCount, s.maxBytes = h.Manifest.Memory.Quota()
	if c := h.Manifest.Redact; c != nil {
		r, err := redact.New(*c)
		if err != nil {
			return nil, err
		}
		if r.Has(loop.StageInput) || r.Has(redact.StageStore) {
			s.redact = r
		}
	}
	return s, nil
}

// AddMemory redacts the entry, admits it against its user's quota and stores it.
func (s *memoryService) AddMemory(ctx context.Context, e memory.Entry) error {
	if s.redact != nil {
		e.Text, _ = s.redact.Redact(e.Text)
		if e.Metadata != nil {
			meta := maps.Clone(e.Metadata)
			for k, v := range meta {
				meta[k], _ = s.redact.Redact(v)
			}
			e.Metadata = meta
		}
		if err := memory.Check(e); err != nil { // "[email]" is longer than "a@b.io"
			return fmt.Errorf("%w: redacted, %w", memory.ErrInvalid, err)
		}
	}
	if e.User == "" || (s.maxCount == 0 && s.maxBytes == 0) {
		return s.Store.AddMemory(ctx, e)
	}
	size := int64(len(e.Text))
	if err := s.admit(ctx, e.User, size); err != nil {
		return err
	}
	err := s.Store.AddMemory(ctx, e)
	s.mu.Lock()
	u := s.used[e.User] // a count since may have replaced the one admit saw; it took over pending
	u.pending, u.pendingBytes = u.pending-1, u.pendingBytes-size
	if err == nil {
		u.count, u.bytes = u.count+1, u.bytes+size
	}
	s.mu.Unlock()
	return err
}

// admit counts a memory of size bytes against user's quota as pending, or refuses it.
// The count is the store's, kept up to date by the adds and deletes made through the
// service; adds are admitted one at a time, so concurrent adds cannot together pass
// the quota.
func (s *memoryService) admit(ctx context.Context, user string, size int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.used[user]
	over := func() bool {
		n, b := u.count+u.pending+1, u.bytes+u.pendingBytes+size
		return (s.maxCount > 0 && n > s.maxCount) || (s.maxBytes > 0 && b > s.maxBytes)
	}
	if u == nil || u.stale || (over() && s.now().Sub(u.counted) >= recountAfter) { // an old count is checked before a refusal
		c, err := s.count(ctx, user)
		if err != nil {
			return err
		}
		if u != nil {
			c.pending, c.pendingBytes = u.pending, u.pendingBytes
		}
		u, s.used[user] = c, c
	}
	if over() {
		return fmt.Errorf("%w: %s keeps %d memories of %d bytes, and one of %d bytes more would pass the quota of %s; delete some first",
			memory.ErrQuota, user, u.count+u.pending, u.bytes+u.pendingBytes, size, s.quotaText())
	}
	u.pending, u.pendingBytes = u.pending+1, u.pendingBytes+size
	return nil
}

func (s *memoryService) quotaText() string {
	c, b := "no count limit", "no byte limit"
	if s.maxCount > 0 {
		c = fmt.Sprintf("%d memories", s.maxCount)
	}
	if s.maxBytes > 0 {
		b = fmt.Sprintf("%d bytes", s.maxBytes)
	}
	return c + ", " + b + " ([memory] max_per_user, max_bytes_per_user)"
}

// count reads what the store keeps of user's.
func (s *memoryService) count(ctx context.Context, user string) (*memoryUsage, error) {
	es, err := s.Store.ListMemory(ctx, memory.Filter{User: user})
	if err != nil {
		return nil, fmt.Errorf("count the memories of %s: %w", user, err)
	}
	u := &memoryUsage{count: len(es), counted: s.now()}
	for _, e := range es {
		u.bytes += int64(len(e.Text))
	}
	return u, nil
}

// DeleteMemory deletes and forgets the counts it changed.
func (s *memoryService) DeleteMemory(ctx context.Context, f memory.Filter) (int, error) {
	n, err := s.Store.DeleteMemory(ctx, f)
	s.mu.Lock()
	for user, u := range s.used {
		if f.User == "" || f.User == user {
			u.stale = true
		}
	}
	s.mu.Unlock()
	return n, err
}

// SearchMemory returns the hits redacted.
func (s *memoryService) SearchMemory(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	hits, err := s.Store.SearchMemory(ctx, q)
	if s.redact != nil {
		for i := range hits {
			hits[i].Text, _ = s.redact.Redact(hits[i].Text)
		}
	}
	return hits, err
}

// ListMemory returns the entries redacted.
func (s *memoryService) ListMemory(ctx context.Context, f memory.Filter) ([]memory.Entry, error) {
	es, err := s.Store.ListMemory(ctx, f)
	if s.redact != nil {
		for i := range es {
			es[i].Text, _ = s.redact.Redact(es[i].Text)
		}
	}
	return es, err
}
