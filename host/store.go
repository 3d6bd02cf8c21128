package host

import (
	"context"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
)

// openStore opens the manifest's session store: memory and SQLite are the host's own;
// another kind (postgres) is the store.Driver its package registered when the program
// imported it (cmd/agenthost imports store/postgres), so the host links no database
// client itself.
func openStore(ctx context.Context, c manifest.StoreConfig) (loop.SessionStore, error) {
	keys, err := storeKeys(c)
	if err != nil {
		return nil, err
	}
	switch c.Kind {
	case "memory":
		return loop.NewMemoryStore(), nil
	case "", "sqlite":
		s, err := store.OpenSQLiteWith(c.Path, store.Options{Keys: keys})
		if err != nil {
			return nil, err // not s: a nil *SQLite in the interface would reach Close
		}
		return s, nil
	}
	return store.OpenDriver(ctx, c.Kind, c.URL, store.Options{Keys: keys})
}

// StoreKeyEnv names the environment variable that may hold the store's key ring.
const StoreKeyEnv = "AGENTHOST_STORE_KEY"

// storeKeys is the store's key ring: from AGENTHOST_STORE_KEY or [store] key_file (one,
// not both: which one wins would be a guess), nil with neither.
func storeKeys(c manifest.StoreConfig) (*seal.Keys, error) {
	env := os.Getenv(StoreKeyEnv)
	switch {
	case env != "" && c.KeyFile != "":
		return nil, fmt.Errorf("store keys: both %s and [store] key_file are set; set one", StoreKeyEnv)
	case env != "":
		k, err := seal.Parse(env)
		if err != nil {
			return nil, fmt.Errorf("store keys: %s: %w", StoreKeyEnv, err)
		}
		return k, nil
	case c.KeyFile != "":
		k, err := seal.Load(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store keys: %w", err)
		}
		return k, nil
	}
	return nil, nil
}

// StoreKeys is the ring the session store seals with, nil for none: serve reads its key
// file again on SIGHUP and when it changes (seal.Keys.Watch).
func (h *Host) StoreKeys() *seal.Keys {
	if k, ok := h.Store.(interface{ Keys() *seal.Keys }); ok {
		return k.Keys()
	}
	return nil
}
