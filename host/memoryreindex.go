package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/providers"
)

// DefaultReindexBatch is how many memories `memory reindex` embeds per provider call.
const DefaultReindexBatch = 64

// Reindexed is where a backfill stands: Done of Total memories have their vector, at the
// cost of Usage (embeddings made for no run: they are in EmbeddingSpend too).
type Reindexed struct {
	Done, Total int
	Usage       loop.Usage
}

// ErrNoEmbeddings is ReindexMemory on a host without [memory.embeddings].
var ErrNoEmbeddings = errors.New("[memory.embeddings] is not set: there is no model to embed with")

// ReindexMemory gives the memories of user ("" = every user's and agent's) that have no
// vector of the current [memory.embeddings] model (stored before embeddings were turned
// on, or made by another model) their vector, batch at a time (0 = DefaultReindexBatch),
// calling progress after each batch. Each batch's vectors are stored before the next is
// embedded, and a memory with a vector of the current model is never embedded again: an
// interrupted backfill resumes where it stopped when run again, and one that has nothing
// left to do does nothing.
func (h *Host) ReindexMemory(ctx context.Context, user string, batch int, progress func(Reindexed)) (Reindexed, error) {
	em, ok := h.memory.(*embeddedMemory)
	if !ok {
		return Reindexed{}, ErrNoEmbeddings
	}
	r, ok := em.Store.(memory.Reindexer)
	if !ok {
		return Reindexed{}, fmt.Errorf("the store (%T) cannot store vectors after the fact", em.Store)
	}
	if batch <= 0 {
		batch = DefaultReindexBatch
	}
	batch = min(batch, providers.MaxEmbedInputs)
	var st Reindexed
	total, err := r.CountStale(ctx, memory.Stale{User: user, Model: em.model})
	if err != nil {
		return st, err
	}
	st.Total = total
	for after := ""; ; {
		es, err := r.Stale(ctx, memory.Stale{User: user, Model: em.model, After: after, Limit: batch})
		if err != nil || len(es) == 0 {
			return st, err
		}
		u, err := em.backfill(ctx, r, es)
		if err != nil {
			return st, err
		}
		after = es[len(es)-1].ID
		st.Done, st.Usage = st.Done+len(es), st.Usage.Add(u)
		st.Total = max(st.Total, st.Done) // memories added meanwhile
		if progress != nil {
			progress(st)
		}
	}
}

// backfill embeds one batch and stores its vectors.
func (m *embeddedMemory) backfill(ctx context.Context, r memory.Reindexer, es []memory.Entry) (loop.Usage, error) {
	texts := make([]string, len(es))
	for i, e := range es {
		texts[i] = e.Text
	}
	vs, u, err := m.vectors(ctx, texts)
	if err != nil {
		return loop.Usage{}, fmt.Errorf("embed memories %s…: %w", es[0].ID, err)
	}
	for i, e := range es {
		if err := r.SetVector(ctx, e.ID, vs[i], m.model); err != nil {
			return u, err
		}
	}
	return u, nil
}
