package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// InMemory is a Store in the process's memory: for tests and for a host whose sessions
// are not stored. Its ranking counts matching terms; the database stores rank by their
// full-text engines, so only the order "more matching words first" is common to all.
type InMemory struct {
	mu      sync.Mutex
	entries []Entry
}

var _ Store = (*InMemory)(nil)

func (m *InMemory) AddMemory(_ context.Context, e Entry) error {
	if err := Check(e); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}

func (m *InMemory) SearchMemory(_ context.Context, q Query) ([]Hit, error) {
	terms := Terms(q.Text)
	m.mu.Lock()
	defer m.mu.Unlock()
	var hits []Hit
	var visible []Entry
	for _, e := range m.entries {
		if !q.Visible(e) || (q.Kind != "" && e.Kind != q.Kind) {
			continue
		}
		visible = append(visible, e)
		words := Terms(e.Text)
		n := 0
		for _, t := range terms {
			if slices.Contains(words, t) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, Hit{Entry: e, Score: float64(n)})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return b.Updated.Compare(a.Updated)
	})
	hits = hits[:min(len(hits), limit(q.Limit))]
	if q.Vector != nil {
		hits = Fuse(hits, Nearest(visible, q.Vector, q.Max()), q.Max())
	}
	return hits, nil
}

func (m *InMemory) ListMemory(_ context.Context, f Filter) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for i := len(m.entries) - 1; i >= 0; i-- {
		if f.Selects(m.entries[i]) {
			out = append(out, m.entries[i])
		}
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (m *InMemory) DeleteMemory(_ context.Context, f Filter) (int, error) {
	if f.Empty() {
		return 0, ErrEmptyFilter
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.entries)
	m.entries = slices.DeleteFunc(m.entries, f.Selects)
	return n - len(m.entries), nil
}

func limit(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

// Max is the number of hits q asks for (Limit, or 10 when 0).
func (q Query) Max() int { return limit(q.Limit) }

var _ Reindexer = (*InMemory)(nil)

func (m *InMemory) Stale(_ context.Context, s Stale) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for _, e := range m.entries {
		if s.Matches(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), s.Max())], nil
}

func (m *InMemory) CountStale(_ context.Context, s Stale) (int, error) {
	s.After = ""
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.entries {
		if s.Matches(e) {
			n++
		}
	}
	return n, nil
}

func (m *InMemory) SetVector(_ context.Context, id string, v []float32, model string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.entries {
		if m.entries[i].ID == id {
			m.entries[i].Vector, m.entries[i].VectorModel = v, model
		}
	}
	return nil
}
