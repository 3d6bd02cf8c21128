package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/store/seal"
)

// Keys is the ring the store seals with (nil: nothing is sealed), for what other packages
// keep in the same database and must seal as the store does: surface/cluster seals its
// River jobs' payloads with it.
func (s *Store) Keys() *seal.Keys { return s.keys }

// SessionData deletes, in DeleteSession's transaction (after the session's lock and the
// lease check), what a package keeps of a session in this database outside the store's
// tables; an error (loop.ErrSessionBusy for a session still in use) rolls the whole
// deletion back. surface/cluster registers one for its River jobs.
type SessionData func(ctx context.Context, tx pgx.Tx, session string) error

var sessionData struct {
	mu sync.RWMutex
	fs []SessionData
}

// OnDeleteSession registers f for every DeleteSession of every store of this process:
// whichever surface deletes a session (users erase, sessions delete, the API, retention),
// its rows elsewhere in the database go in the same transaction.
func OnDeleteSession(f SessionData) {
	sessionData.mu.Lock()
	defer sessionData.mu.Unlock()
	sessionData.fs = append(sessionData.fs, f)
}

func deleteSessionData(ctx context.Context, tx pgx.Tx, session string) error {
	sessionData.mu.RLock()
	fs := sessionData.fs
	sessionData.mu.RUnlock()
	for _, f := range fs {
		if err := f(ctx, tx, session); err != nil {
			return err
		}
	}
	return nil
}
