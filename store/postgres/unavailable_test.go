package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// A read or a write whose connection the server cuts answers an error marked StoreUnavailable (the
// loop waits for the store, rule L23; the server answers 503 and a followed workflow
// keeps following), wherever pgx reports the cut: at the query, or only at the rows'
// end (rows.Err), which Runs, Load and the listings returned unmarked — a workflow's
// stream ended in an error when the database restarted during its step's read of runs.
func TestAStatementOnACutConnectionIsMarkedUnavailable(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	s := open(t, url)
	killer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	if err := s.Append(ctx, "s", loop.Entry{Seq: 1, Kind: loop.EntryMessage, Message: ptr(loop.UserMessage("hi"))}); err != nil {
		t.Fatal(err)
	}
	next := int64(2) // the seq Append writes next
	reads := map[string]func() error{
		"Runs":     func() error { _, err := s.Runs(ctx, "s"); return err },
		"Load":     func() error { _, err := s.Load(ctx, "s"); return err },
		"Sessions": func() error { _, err := s.Sessions(ctx); return err },
		// Writes: one statement on the pool (SaveRun's was returned unmarked), and
		// transactions (the door's Begin, Exec, CopyFrom and Commit).
		"SaveRun":       func() error { return s.SaveRun(ctx, loop.RunRecord{ID: "r", SessionID: "s"}) },
		"KVSet":         func() error { return s.KVSet(ctx, "p", "k", []byte("v")) },
		"ForgetSession": func() error { return s.ForgetSession(ctx, "s") },
		"Append": func() error {
			err := s.Append(ctx, "s", loop.Entry{Seq: next, Kind: loop.EntryMessage, Message: ptr(loop.UserMessage("again"))})
			if err == nil {
				next++
			}
			return err
		},
	}
	for name, read := range reads {
		failed := 0
		for range 10 { // the pool may replace a cut connection before the read: try again
			if err := read(); err != nil {
				t.Fatalf("%s before the cut: %v", name, err)
			}
			if _, err := killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
			err := read()
			if err == nil {
				continue
			}
			failed++
			var u interface{ StoreUnavailable() bool }
			if !errors.As(err, &u) || !u.StoreUnavailable() {
				t.Fatalf("%s on a cut connection: %v (%T), not marked StoreUnavailable", name, err, errors.Unwrap(err))
			}
		}
		if failed == 0 {
			t.Fatalf("%s never met a cut connection in 10 tries", name)
		}
	}
}

func ptr[T any](v T) *T { return &v }
