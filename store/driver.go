package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// A Driver opens a session store kept by a database server, given its URL ([store] url)
// and the options the SQLite store takes. The store package links no server's client:
// store/postgres registers the "postgres" driver when a program imports it, as
// database/sql's drivers do, so a program that never opens such a store (an embedding
// program on SQLite, the provider adapters) does not link pgx.
type Driver func(ctx context.Context, url string, o Options) (loop.SessionStore, error)

var drivers sync.Map // kind → Driver

// Register makes a driver the one of a [store] kind. Registering a kind twice, or a
// nil driver, is a program error and panics, at start.
func Register(kind string, d Driver) {
	if d == nil {
		panic("store: Register of a nil driver for " + kind)
	}
	if _, dup := drivers.LoadOrStore(kind, d); dup {
		panic("store: Register called twice for " + kind)
	}
}

// OpenDriver opens a store of a registered kind. A kind no imported package registered
// is an error naming the package to import.
func OpenDriver(ctx context.Context, kind, url string, o Options) (loop.SessionStore, error) {
	d, ok := drivers.Load(kind)
	if !ok {
		return nil, fmt.Errorf("a %s store is not linked into this program: import github.com/agenthost/agenthost/store/%s", kind, kind)
	}
	return d.(Driver)(ctx, url, o)
}
