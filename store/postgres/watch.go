package postgres

import (
	"context"
	"sync"
	"time"
)

// notifyChannel is the LISTEN/NOTIFY channel on which every append names its session.
const notifyChannel = "agenthost_entries"

// watchers fans the store's notifications out to the streams that wait for a session:
// one listening connection per Store, however many streams.
type watchers struct {
	mu     sync.Mutex
	subs   map[string]map[chan struct{}]struct{}
	cancel context.CancelFunc
	ready  chan struct{} // closed once the first LISTEN is in place
}

// Watch returns a channel that receives (without blocking the store) after entries are
// appended to the session by any process on the database, and a function that stops
// the watch. Notifications can be missed while the listening connection reconnects:
// callers also re-read now and then.
func (s *Store) Watch(ctx context.Context, session string) (<-chan struct{}, func()) {
	w := &s.watch
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[string]map[chan struct{}]struct{}{}
		lctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.ready = cancel, make(chan struct{})
		go s.listen(lctx)
	}
	ready := w.ready
	if w.subs[session] == nil {
		w.subs[session] = map[chan struct{}]struct{}{}
	}
	w.subs[session][ch] = struct{}{}
	w.mu.Unlock()
	// An append after Watch returns wakes the channel: wait (briefly) for the first
	// LISTEN, so a caller that reads the session next cannot miss what follows.
	select {
	case <-ready:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	return ch, func() {
		w.mu.Lock()
		delete(w.subs[session], ch)
		if len(w.subs[session]) == 0 {
			delete(w.subs, session)
		}
		w.mu.Unlock()
	}
}

// listen holds one connection in LISTEN and wakes the session's watchers on each
// notification, reconnecting after a failure until the store closes.
func (s *Store) listen(ctx context.Context) {
	for ctx.Err() == nil {
		s.listenOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context) {
	_ = s.db.listen(ctx, notifyChannel, func() {
		s.watch.mu.Lock()
		select {
		case <-s.watch.ready:
		default:
			close(s.watch.ready)
		}
		s.watch.mu.Unlock()
	}, func(session string) {
		s.watch.mu.Lock()
		for ch := range s.watch.subs[session] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		s.watch.mu.Unlock()
	})
}
