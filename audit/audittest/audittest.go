// Package audittest is the conformance suite every audit.Store passes: the stores' tests
// run it against a real SQLite file and a real PostgreSQL server.
package audittest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
)

// Run runs the suite; open returns a new, empty store.
func Run(t *testing.T, open func(t *testing.T) audit.Store) {
	t.Run("AppendsChainAndReadBack", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		for i := range 3 {
			r, err := s.AppendAudit(ctx, audit.Record{Time: time.Now(), Action: audit.ActionRunStart, Actor: "ana",
				Target: fmt.Sprintf("s/r%d", i), Detail: map[string]string{"agent": "helper", "n": fmt.Sprint(i)}})
			if err != nil || r.Seq != int64(i+1) || r.Hash == "" {
				t.Fatalf("append %d: %+v %v", i, r, err)
			}
		}
		all, err := s.Audit(ctx, 0, 0)
		if err != nil || len(all) != 3 || all[2].Detail["n"] != "2" || all[1].Target != "s/r1" {
			t.Fatalf("audit = %+v %v", all, err)
		}
		if err := audit.Verify(all); err != nil {
			t.Fatalf("the stored chain does not verify: %v", err)
		}
		page, err := s.Audit(ctx, 1, 1)
		if err != nil || len(page) != 1 || page[0].Seq != 2 {
			t.Fatalf("page after 1, limit 1 = %+v %v", page, err)
		}
	})
	t.Run("ConcurrentAppendsMakeOneGaplessChain", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.AppendAudit(ctx, audit.Record{Time: time.Now(), Action: audit.ActionRunEnd, Actor: fmt.Sprint("u", i)}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		all, err := s.Audit(ctx, 0, 0)
		if err != nil || len(all) != 16 {
			t.Fatalf("%d records, %v", len(all), err)
		}
		if err := audit.Verify(all); err != nil {
			t.Fatalf("concurrent appends broke the chain: %v", err)
		}
	})
}
