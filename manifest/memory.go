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
	// MaxPerUser and MaxBytesPerUser are each user's quota: how many memories, and how
	// many bytes of their text, a user may keep (0: DefaultMaxPerUser and
	// DefaultMaxBytesPerUser; -1: no limit). An entry past either is refused, whoever
	// adds it (the remember tool, a memory plugin, the HTTP API, the CLI).
	MaxPerUser      int   `toml:"max_per_user"`
	MaxBytesPerUser int64 `toml:"max_bytes_per_user"`
}

// The default quota of a user's memories: a thousand, and 1 MiB of text.
const (
	DefaultMaxPerUser      = 1000
	DefaultMaxBytesPerUser = 1 << 20
)

// Quota is the quota in force: count and bytes, 0 for no limit.
func (c MemoryConfig) Quota() (count int, bytes int64) {
	count, bytes = c.MaxPerUser, c.MaxBytesPerUser
	switch count {
	case 0:
		count = DefaultMaxPerUser
	case -1:
		count = 0
	}
	switch bytes {
	case 0:
		bytes = DefaultMaxBytesPerUser
	case -1:
		bytes = 0
	}
	return count, bytes
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
	if c.MaxPerUser < -1 {
		return m.ErrorAt("memory.max_per_user", "max_per_user %d: want a count, 0 (default %d) or -1 (no limit)", c.MaxPerUser, DefaultMaxPerUser)
	}
	if c.MaxBytesPerUser < -1 {
		return m.ErrorAt("memory.max_bytes_per_user", "max_bytes_per_user %d: want bytes, 0 (default %d) or -1 (no limit)", c.MaxBytesPerUser, DefaultMaxBytesPerUser)
	}
	if e := c.Embeddings; e != nil {
		if _, ok := m.Providers[e.Provider]; !ok {
			return m.ErrorAt("memory.embeddings.provider", "unknown provider %q (defined: %s)", e.Provider, strings.Join(m.ProviderNames(), ", "))
		}
	}
	return nil
}
