package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
)

// v9DB writes a file as agenthost wrote it at schema version 9 (before genesis
// records), with n audit records chained from record 1.
func v9DB(t *testing.T, n int) (string, []audit.Record) {
	t.Helper()
	db, path := dbAtSchema(t, 9)
	defer db.Close()
	ctx := context.Background()
	var recs []audit.Record
	for i := range n {
		r := audit.Record{Time: time.Now(), Action: audit.ActionRunStart, Actor: "ana", Target: "s/r"}
		var prev *audit.Record
		if i > 0 {
			prev = &recs[i-1]
		}
		audit.Chain(&r, prev)
		if err := insertAudit(ctx, db, r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return path, recs
}

// A log begun before genesis records keeps its records when the file is upgraded, and
// gets no genesis (none can be put before its record 1): VerifyLog reports it, and
// accepts it when legacy is asked for. An upgraded file whose log is empty begins it.
func TestUpgradingKeepsALegacyLogAndBeginsAnEmptyOne(t *testing.T) {
	ctx := context.Background()
	path, recs := v9DB(t, 3)
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Audit(ctx, 0, 0)
	s.Close()
	if err != nil || len(got) != 3 || got[0].Hash != recs[0].Hash || got[2].Hash != recs[2].Hash {
		t.Fatalf("the legacy log after the upgrade: %+v %v", got, err)
	}
	var ng *audit.NoGenesisError
	if _, err := audit.VerifyLog(got, false); !errors.As(err, &ng) {
		t.Fatalf("a legacy log: %v", err)
	}
	if cp, err := audit.VerifyLog(got, true); err != nil || !cp.Legacy || cp.Records != 3 {
		t.Fatalf("a legacy log, accepted: %+v %v", cp, err)
	}
	path, _ = v9DB(t, 0)
	if s, err = OpenSQLite(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err = s.Audit(ctx, 0, 0)
	if err != nil || len(got) != 1 || got[0].Action != audit.ActionGenesis {
		t.Fatalf("an empty log after the upgrade: %+v %v", got, err)
	}
}
