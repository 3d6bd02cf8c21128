package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
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
	if c == nil || h.memory == nil || h.opts.NoEmbeddings {
		return nil
	}
	pc := h.Manifest.Providers[c.Provider]
	client, err := h.client(ctx, c.Provider, pc)
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
	em := &embeddedMemory{Store: h.memory, model: c.Provider + "/" + c.Model,
		embed: func(ctx context.Context, texts []string) ([][]float32, *providers.Usage, error) {
			ctx, cancel := context.WithTimeout(ctx, embedTimeout)
			defer cancel()
			return client.Embed(ctx, c.Model, texts)
		}}
	if p := linkPricing(pc, manifest.PricingConfig{}, c.Model); p != nil {
		em.pricing = &loop.Pricing{PromptPerMTok: p.PromptPerMTok} // the price table's when pc sets none
	}
	h.memory = em
	return nil
}

// embeddedMemory gives memories their vectors on the way in and searches their vectors
// on the way out.
type embeddedMemory struct {
	memory.Store
	model   string // what made the vectors: "PROVIDER/MODEL" (memory.Entry.VectorModel)
	embed   func(ctx context.Context, texts []string) ([][]float32, *providers.Usage, error)
	pricing *loop.Pricing // the provider's prices ([providers.NAME] pricing); nil: the run's

	mu      sync.Mutex
	outside loop.Usage // what embeddings made for no run spent (EmbeddingSpend)
}

// AddMemory embeds the text first; a memory that cannot be embedded is not stored (the
// caller sees why), rather than stored where similarity search will never find it.
func (m *embeddedMemory) AddMemory(ctx context.Context, e memory.Entry) error {
	if e.Vector == nil {
		vs, _, err := m.vectors(ctx, []string{e.Text})
		if err != nil {
			return fmt.Errorf("embed memory: %w", err)
		}
		e.Vector, e.VectorModel = vs[0], m.model
	}
	return m.Store.AddMemory(ctx, e)
}

// SearchMemory embeds the query and searches words and similarity; when the embedding
// fails (the provider is down, or the run's budget cannot pay for it), the search falls
// back to words alone, so recall degrades rather than failing the run.
func (m *embeddedMemory) SearchMemory(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	if q.Vector == nil && strings.TrimSpace(q.Text) != "" {
		if vs, _, err := m.vectors(ctx, []string{q.Text}); err == nil {
			q.Vector = vs[0]
		}
	}
	return m.Store.SearchMemory(ctx, q)
}

// vectors embeds texts and accounts for it. On behalf of a run (ctx carries its
// loop.Ledger: recall before a model call, the remember tool) the run's ledger admits the
// call against the run's budgets and is charged for it, as for the plugins' model calls:
// one spend, one budget. Outside a run (the CLI, the HTTP API) the spend is added to
// EmbeddingSpend, for the caller to report. A provider that reports no usage is charged
// the estimate (a token per four bytes).
func (m *embeddedMemory) vectors(ctx context.Context, texts []string) ([][]float32, loop.Usage, error) {
	est := estimateEmbedding(texts)
	ledger := loop.LedgerFrom(ctx)
	if err := m.admit(ledger, est); err != nil {
		return nil, loop.Usage{}, fmt.Errorf("embedding refused: %w", err)
	}
	vs, pu, err := m.embed(ctx, texts)
	if err != nil {
		return nil, loop.Usage{}, err
	}
	u := loop.Usage{PromptTokens: int(pu.GetPromptTokens()), TotalTokens: int(pu.GetTotalTokens()), CostUSD: pu.GetCostUsd()}
	if u.PromptTokens == 0 && u.TotalTokens == 0 {
		u.PromptTokens = est
	}
	return vs, m.charge(ledger, u), nil
}

func (m *embeddedMemory) admit(ledger *loop.Ledger, est int) error {
	switch {
	case ledger == nil:
		return nil
	case m.pricing != nil:
		return ledger.AdmitAt(est, *m.pricing)
	}
	return ledger.Admit(est)
}

// charge puts u on the run's ledger, or on the spend of no run; it returns u as charged
// (priced, with its total).
func (m *embeddedMemory) charge(ledger *loop.Ledger, u loop.Usage) loop.Usage {
	switch {
	case ledger != nil && m.pricing != nil:
		return ledger.ChargeAt(u, *m.pricing)
	case ledger != nil:
		return ledger.Charge(u) // at the run's prices
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens
	}
	if u.CostUSD == 0 && m.pricing != nil {
		u.CostUSD = float64(u.PromptTokens) * m.pricing.PromptPerMTok / 1e6
	}
	m.mu.Lock()
	m.outside = m.outside.Add(u)
	m.mu.Unlock()
	return u
}

// estimateEmbedding is what texts are admitted at before the provider counts them.
func estimateEmbedding(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(t)/4 + 1
	}
	return n
}

// EmbeddingSpend is what [memory.embeddings] spent on behalf of no run since the host
// opened: memories added and searched through the CLI or the HTTP API, and `memory
// reindex`. (Embeddings made for a run are in that run's usage and budget.) Zero without
// embeddings.
func (h *Host) EmbeddingSpend() loop.Usage {
	m, ok := h.memory.(*embeddedMemory)
	if !ok {
		return loop.Usage{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outside
}
