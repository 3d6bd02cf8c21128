package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// Two writers append the same next seq to one session at once: exactly one wins.
func raceOneSession(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	for round := range 10 {
		session := fmt.Sprintf("race%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for w := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = s.Append(ctx, session, entries(session, fmt.Sprint(w), 1, 2)...)
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			}
		}
		if es, _ := s.Load(ctx, session); wins != 1 || len(es) != 2 {
			t.Fatalf("round %d: %d winners, %d entries (errors %v)", round, wins, len(es), errs)
		}
	}
}

func manySessions(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8*20)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprintf("many%d", w)
			for i := range 20 {
				if err := s.Append(ctx, session, entries(session, "r", int64(i+1), 1)...); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range 8 {
		if es, _ := s.Load(ctx, fmt.Sprintf("many%d", w)); len(es) != 20 {
			t.Fatalf("session %d has %d entries", w, len(es))
		}
	}
}
