package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/seal"
)

// As on SQLite: rows written by another process (still sealing with the old key) between
// Reseal's read and its write keep their new values, and are re-sealed under the new key
// after the pass; a row that never settles is given up with "run it again", holding the
// writer's last value.
func TestPostgresResealSkipsARowChangedMeanwhile(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDatabase(t)
	ctx := context.Background()
	k1, _ := seal.NewKey()
	k2, _ := seal.NewKey()
	serving := openKeyed(t, url, ring(t, k1))
	fillPG(t, serving)
	if err := serving.KVSet(ctx, "counter", "n", []byte("1")); err != nil {
		t.Fatal(err)
	}
	ms, err := serving.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("memories %v %v", ms, err)
	}
	rotating := openKeyed(t, url, ring(t, k2, k1))
	raced := map[string]bool{}
	rotating.race = func(table string) {
		if raced[table] {
			return
		}
		raced[table] = true
		var err error
		switch table {
		case "entries":
			if err = serving.DeleteSession(ctx, "s1"); err == nil {
				err = serving.Append(ctx, "s1", loop.Entry{Seq: 1, RunID: "r2", Time: time.Now(), Kind: loop.EntryMessage,
					Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: "text", Text: "written meanwhile"}}}})
			}
		case "kv":
			err = serving.KVSet(ctx, "counter", "n", []byte("2"))
		case "memories":
			err = serving.SetVector(ctx, ms[0].ID, []float32{1, 2, 3}, "m1")
		}
		if err != nil {
			t.Errorf("%s: %v", table, err)
		}
	}
	st, err := rotating.Reseal(ctx)
	if err != nil || st.Changed != 3 || len(raced) != 3 {
		t.Fatalf("Reseal = %+v, %v (raced %v), want 3 rows changed meanwhile", st, err, raced)
	}
	only := openKeyed(t, url, ring(t, k2))
	if es, err := only.Load(ctx, "s1"); err != nil || len(es) != 1 || es[0].Message.Text() != "written meanwhile" {
		t.Fatalf("the entry written meanwhile: %+v %v", es, err)
	}
	if v, _, err := only.KVGet(ctx, "counter", "n"); err != nil || string(v) != "2" {
		t.Fatalf("the counter incremented meanwhile reads %q, %v: want 2", v, err)
	}
	got, err := only.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(got) != 1 || len(got[0].Vector) != 3 || !strings.Contains(got[0].Text, "zanzibar") {
		t.Fatalf("the memory whose vector was set meanwhile: %+v %v", got, err)
	}

	n := 0
	k3, _ := seal.NewKey()
	again := openKeyed(t, url, ring(t, k3, k2))
	old := openKeyed(t, url, ring(t, k2))
	again.race = func(string) {
		n++
		if err := old.KVSet(ctx, "counter", "n", []byte(strings.Repeat("x", n))); err != nil {
			t.Error(err)
		}
	}
	if _, err := again.Reseal(ctx); err == nil || !strings.Contains(err.Error(), "run it again") {
		t.Fatalf("Reseal of a row that never settles: %v", err)
	}
	if v, _, err := old.KVGet(ctx, "counter", "n"); err != nil || string(v) != strings.Repeat("x", n) {
		t.Fatalf("the counter reads %q, %v: want the last write (%d x)", v, err, n)
	}
}
