package manifest

import "strings"

// MemoryConfig is the [memory] table: long-term memory (package memory), kept in the
// session store's database. Off unless enabled.
type MemoryConfig struct {
	Enabled bool `toml:"enabled"`
	// Recall is how many memories matching the user's latest message are given to the
	// model before each model call, with the user's preferences (0: 5; -1: none, the
	// model uses the recall tool).
	Recall int `toml:"recall"`
	// Tools offers remember, recall and forget to the model (default true).
	Tools *bool `toml:"tools"`
	// Embeddings, when set, names the provider (and model) that embeds memories: search
	// is then hybrid, words and similarity (embed.go, docs/memory.md).
	Embeddings *EmbeddingsConfig `toml:"embeddings"`
}

// EmbeddingsConfig is [memory.embeddings].
type EmbeddingsConfig struct {
	Provider string `toml:"provider"` // a [providers.NAME] whose adapter has embeddings
	Model    string `toml:"model"`    // the embedding model; "" is the adapter's default
}

// DefaultRecall is how many memories are given to the model when [memory] recall is 0.
const DefaultRecall = 5

func (m *Manifest) checkMemory() error {
	c := m.Memory
	if c.Recall < -1 || c.Recall > 50 {
		return m.ErrorAt("memory.recall", "recall %d: want -1 (none), 0 (default %d) or up to 50", c.Recall, DefaultRecall)
	}
	if e := c.Embeddings; e != nil {
		if _, ok := m.Providers[e.Provider]; !ok {
			return m.ErrorAt("memory.embeddings.provider", "unknown provider %q (defined: %s)", e.Provider, strings.Join(m.ProviderNames(), ", "))
		}
	}
	return nil
}
