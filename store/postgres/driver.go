package postgres

import (
	"context"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
)

// The "postgres" store kind: importing this package is what links it into a program
// (store.Driver).
func init() {
	store.Register("postgres", func(ctx context.Context, url string, o store.Options) (loop.SessionStore, error) {
		s, err := OpenWith(ctx, url, Options{Keys: o.Keys})
		if err != nil {
			return nil, err // not s: a nil *Store in the interface would reach Close
		}
		return s, nil
	})
}
