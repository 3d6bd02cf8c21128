package memory

import "context"

// Stale selects the memories Reindexer.Stale returns: those whose vector was not made
// by Model (none, or another model's), of User when set ("" = every user's and every
// agent's), with ids after After, in id order, at most Limit (0 = 100). Walking by id
// makes a backfill resumable: a batch whose vectors were stored no longer matches.
type Stale struct {
	User  string
	Model string
	After string
	Limit int
}

// Max is the number of entries s asks for.
func (s Stale) Max() int {
	if s.Limit <= 0 {
		return 100
	}
	return s.Limit
}

// Matches reports whether s selects e (the one rule every Reindexer keeps).
func (s Stale) Matches(e Entry) bool {
	return (e.Vector == nil || e.VectorModel != s.Model) && (s.User == "" || e.User == s.User) && e.ID > s.After
}

// Reindexer is a Store that can give memories stored before embeddings were turned on
// (or made with another model) their vectors: `agenthost memory reindex`. The session
// stores and InMemory implement it.
type Reindexer interface {
	Store
	// Stale returns the entries s selects, in id order.
	Stale(ctx context.Context, s Stale) ([]Entry, error)
	// CountStale counts the entries s selects, After and Limit aside.
	CountStale(ctx context.Context, s Stale) (int, error)
	// SetVector stores the vector of entry id and the model that made it, leaving its
	// text and times alone. An id that is gone (deleted meanwhile) is not an error.
	SetVector(ctx context.Context, id string, v []float32, model string) error
}
