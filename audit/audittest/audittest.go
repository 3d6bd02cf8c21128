// Package audittest is the conformance suite every audit.Store passes: the stores' tests
// run it against a real SQLite file and a real PostgreSQL server. Its attacks change the
// log's table with SQL from outside the store, as someone with write access to the
// database would, and check that audit.VerifyLog, or a checkpoint, finds each.
package audittest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
)

// Tamper runs one SQL statement on the store's database, outside the store.
type Tamper func(t *testing.T, stmt string)

// Run runs the suite; open returns a new store (as a new database: its log holds its
// genesis record only) and a Tamper on its database.
func Run(t *testing.T, open func(t *testing.T) (audit.Store, Tamper)) {
	t.Run("ANewLogBeginsWithItsGenesisRecord", func(t *testing.T) { newLog(t, open) })
	t.Run("AppendsChainAndReadBack", func(t *testing.T) { appendsChain(t, open) })
	t.Run("ConcurrentAppendsMakeOneGaplessChain", func(t *testing.T) { concurrentAppends(t, open) })
	attacks(t, open)
}

func newLog(t *testing.T, open func(t *testing.T) (audit.Store, Tamper)) {
	s, _ := open(t)
	all, err := s.Audit(context.Background(), 0, 0)
	if err != nil || len(all) != 1 || all[0].Action != audit.ActionGenesis || len(all[0].Detail["log"]) != 32 {
		t.Fatalf("a new log: %+v %v", all, err)
	}
	if cp, err := audit.VerifyLog(all, false); err != nil || cp.Records != 1 || cp.Log != all[0].Hash {
		t.Fatalf("VerifyLog = %+v %v", cp, err)
	}
	// A second genesis record is refused by the store.
	if _, err := s.AppendAudit(context.Background(), audit.Record{Time: time.Now(), Action: audit.ActionGenesis, Actor: "mallory"}); err == nil {
		t.Fatal("the store took a second genesis record")
	}
}

func appendsChain(t *testing.T, open func(t *testing.T) (audit.Store, Tamper)) {
	s, _ := open(t)
	ctx := context.Background()
	for i := range 3 {
		r, err := s.AppendAudit(ctx, audit.Record{Time: time.Now(), Action: audit.ActionRunStart, Actor: "ana",
			Target: fmt.Sprintf("s/r%d", i), Detail: map[string]string{"agent": "helper", "n": fmt.Sprint(i)}})
		if err != nil || r.Seq != int64(i+2) || r.Hash == "" {
			t.Fatalf("append %d: %+v %v", i, r, err)
		}
	}
	all, err := s.Audit(ctx, 0, 0)
	if err != nil || len(all) != 4 || all[3].Detail["n"] != "2" || all[2].Target != "s/r1" {
		t.Fatalf("audit = %+v %v", all, err)
	}
	if _, err := audit.VerifyLog(all, false); err != nil {
		t.Fatalf("the stored log does not verify: %v", err)
	}
	page, err := s.Audit(ctx, 2, 1)
	if err != nil || len(page) != 1 || page[0].Seq != 3 {
		t.Fatalf("page after 2, limit 1 = %+v %v", page, err)
	}
}

func concurrentAppends(t *testing.T, open func(t *testing.T) (audit.Store, Tamper)) {
	s, _ := open(t)
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
	if err != nil || len(all) != 17 {
		t.Fatalf("%d records, %v", len(all), err)
	}
	if _, err := audit.VerifyLog(all, false); err != nil {
		t.Fatalf("concurrent appends broke the chain: %v", err)
	}
}

// attacks: a log of seven records (genesis and six) is changed with SQL; each change is
// found, by VerifyLog alone or, for a cut tail, against a checkpoint taken before.
func attacks(t *testing.T, open func(t *testing.T) (audit.Store, Tamper)) {
	for _, c := range []struct {
		name  string
		stmts []string
		want  string // VerifyLog's error; "" when only the checkpoint finds it
		cp    string // VerifyCheckpoint's error
	}{
		{"ADeletedHeadIsFound", []string{`DELETE FROM audit WHERE seq <= 2`}, "the audit log begins at record 3: records 1 to 2 were deleted", ""},
		{"ADeletedMiddleIsFound", []string{`DELETE FROM audit WHERE seq = 4`}, "audit record 5 follows 3: 1 records are missing", ""},
		{"ARenumberingIsFound", []string{`DELETE FROM audit WHERE seq = 4`, `UPDATE audit SET seq = -seq WHERE seq > 4`, `UPDATE audit SET seq = -seq - 1 WHERE seq < 0`},
			"audit record 4 does not follow record 3", ""},
		{"ADeletedHeadRenumberedIsFound", []string{`DELETE FROM audit WHERE seq <= 2`, `UPDATE audit SET seq = -seq`, `UPDATE audit SET seq = -seq - 2 WHERE seq < 0`},
			`the audit log has no genesis record: record 1 is a "run.start" record`, ""},
		{"AWipedLogIsFound", []string{`DELETE FROM audit`}, "the audit log is empty", ""},
		{"ACutTailIsFoundByACheckpoint", []string{`DELETE FROM audit WHERE seq > 5`}, "",
			"the audit log holds 5 records, the checkpoint 7: records 6 to 7 were deleted (the tail was cut)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, tamper := open(t)
			ctx := context.Background()
			for i := range 6 {
				if _, err := s.AppendAudit(ctx, audit.Record{Time: time.Now(), Action: audit.ActionRunStart, Actor: "ana", Target: fmt.Sprint("s/r", i)}); err != nil {
					t.Fatal(err)
				}
			}
			before, err := s.Audit(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := audit.VerifyLog(before, false)
			if err != nil || cp.Records != 7 {
				t.Fatalf("before: %+v %v", cp, err)
			}
			for _, stmt := range c.stmts {
				tamper(t, stmt)
			}
			after, err := s.Audit(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = audit.VerifyLog(after, false)
			if c.want == "" {
				if err != nil {
					t.Fatalf("VerifyLog alone: %v (want it to pass: only the checkpoint can tell)", err)
				}
				if err := audit.VerifyCheckpoint(after, cp); err == nil || err.Error() != c.cp {
					t.Fatalf("VerifyCheckpoint: %v, want %q", err, c.cp)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("VerifyLog: %v, want %q", err, c.want)
			}
			// An append after the attack does not hide it: the store never begins a log
			// again, and chains after what it finds.
			if _, err := s.AppendAudit(ctx, audit.Record{Time: time.Now(), Action: audit.ActionRunEnd, Actor: "ana"}); err != nil {
				t.Fatal(err)
			}
			after, _ = s.Audit(ctx, 0, 0)
			var ng *audit.NoGenesisError
			if _, err := audit.VerifyLog(after, false); err == nil || (!strings.Contains(err.Error(), c.want) && !errors.As(err, &ng)) {
				t.Fatalf("VerifyLog after one more append: %v", err)
			}
		})
	}
}
