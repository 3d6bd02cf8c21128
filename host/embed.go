package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/providers"
)

// embedTimeout bounds one embedding call: recall waits on it before a model call.
const embedTimeout = 30 * time.Second

// openEmbeddings starts [memory.embeddings]' provider and checks that it embeds, so a
// provider without embeddings is an error when the host opens, not at the first memory.
// The memory store is then wrapped: every memory added gets its vector, every search is
// hybrid. All surfaces (the model's tools, recall, the CLI, the HTTP API) use Memory(), so
// none can add a memory without one.
func (h *Host) openEmbeddings(ctx context.Context) error {
	c := h.Manifest.Memory.Embeddings
	if c == nil || h.memory == nil {
		return nil
	}
	client, err := h.client(ctx, c.Provider, h.Manifest.Providers[c.Provider])
	if err != nil {
		return fmt.Errorf("[memory.embeddings] provider %q: %w", c.Provider, err)
	}
	info, err := client.Info(ctx)
	if err != nil {
		return fmt.Errorf("[memory.embeddings] provider %q: %w", c.Provider, err)
	}
	if !slices.Contains(info.GetCapabilities(), providers.CapEmbeddings) {
		return fmt.Errorf("[memory.embeddings] provider %q (%s) has no embeddings (its capabilities: %s)",
			c.Provider, info.GetName(), strings.Join(info.GetCapabilities(), ", "))
	}
	h.memory = &embeddedMemory{Store: h.memory, embed: func(ctx context.Context, texts []string) ([][]float32, error) {
		ctx, cancel := context.WithTimeout(ctx, embedTimeout)
		defer cancel()
		return client.Embed(ctx, c.Model, texts)
	}}
	return nil
}

// embeddedMemory gives memories their vectors on the way in and searches their vectors
// on the way out.
type embeddedMemory struct {
	memory.Store
	embed func(ctx context.Context, texts []string) ([][]float32, error)
}

// AddMemory embeds the text first; a memory that cannot be embedded is not stored (the
// caller sees why), rather than stored where similarity search will never find it.
func (m *embeddedMemory) AddMemory(ctx context.Context, e memory.Entry) error {
	if e.Vector == nil {
		vs, err := m.embed(ctx, []string{e.Text})
		if err != nil {
			return fmt.Errorf("embed memory: %w", err)
		}
		e.Vector = vs[0]
	}
	return m.Store.AddMemory(ctx, e)
}

// SearchMemory embeds the query and searches words and similarity; when the embedding
// fails (the provider is down), the search falls back to words alone, so recall degrades
// rather than failing the run.
func (m *embeddedMemory) SearchMemory(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	if q.Vector == nil && strings.TrimSpace(q.Text) != "" {
		if vs, err := m.embed(ctx, []string{q.Text}); err == nil {
			q.Vector = vs[0]
		}
	}
	return m.Store.SearchMemory(ctx, q)
}
