package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store"
)

// A row written by another process (a serve still sealing with the old key) between
// Reseal's read and its write is skipped, not overwritten with what it held before: the
// entry rewritten, the counter incremented, the memory's vector set all keep their new
// values, and, read again after the pass, are re-sealed under the new key, so the new key
// alone opens everything.
func TestResealSkipsARowChangedMeanwhileAndResealsItAfterThePass(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	k1, k2 := newKey(t), newKey(t)
	serving := openSealed(t, path, newRing(t, k1)) // the old ring, not reloaded
	fill(t, serving, "zanzibar")
	if err := serving.KVSet(ctx, "counter", "n", []byte("1")); err != nil {
		t.Fatal(err)
	}
	ms, err := serving.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("memories %v %v", ms, err)
	}
	id := ms[0].ID
	rotating := openSealed(t, path, newRing(t, k2, k1))
	raced := map[string]bool{}
	store.RaceReseal(rotating, func(table string) {
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
			err = serving.SetVector(ctx, id, []float32{1, 2, 3}, "m1")
		}
		if err != nil {
			t.Errorf("%s: %v", table, err)
		}
	})
	st, err := rotating.Reseal(ctx)
	if err != nil || st.Changed != 3 || !raced["entries"] || !raced["kv"] || !raced["memories"] {
		t.Fatalf("Reseal = %+v, %v (raced %v), want 3 rows changed meanwhile", st, err, raced)
	}
	rotating.Close()
	serving.Close()
	only := openSealed(t, path, newRing(t, k2))
	es, err := only.Load(ctx, "s1")
	if err != nil || len(es) != 1 || es[0].Message.Text() != "written meanwhile" {
		t.Fatalf("the entry written meanwhile: %+v %v", es, err)
	}
	if v, _, err := only.KVGet(ctx, "counter", "n"); err != nil || string(v) != "2" {
		t.Fatalf("the counter incremented meanwhile reads %q, %v: want 2", v, err)
	}
	ms, err = only.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(ms) != 1 || len(ms[0].Vector) != 3 || ms[0].Vector[2] != 3 || !strings.Contains(ms[0].Text, "zanzibar") {
		t.Fatalf("the memory whose vector was set meanwhile: %+v %v", ms, err)
	}
	if v, _, err := only.KVGet(ctx, "notes", "k"); err != nil || string(v) != "zanzibar value" {
		t.Fatalf("an untouched value: %q %v", v, err)
	}
}

// A row that changes every time Reseal reads it (a writer sealing with the old key
// without pause) is given up after a bounded number of tries, with an error that says to
// run rotate-key again, and holds the writer's last value, never the one Reseal read.
func TestResealGivesUpOnARowThatKeepsChanging(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	k1, k2 := newKey(t), newKey(t)
	serving := openSealed(t, path, newRing(t, k1))
	if err := serving.KVSet(ctx, "counter", "n", []byte("0")); err != nil {
		t.Fatal(err)
	}
	rotating := openSealed(t, path, newRing(t, k2, k1))
	n := 0
	store.RaceReseal(rotating, func(string) {
		n++
		if err := serving.KVSet(ctx, "counter", "n", []byte(strings.Repeat("x", n))); err != nil {
			t.Error(err)
		}
	})
	_, err := rotating.Reseal(ctx)
	if err == nil || !strings.Contains(err.Error(), "run it again") {
		t.Fatalf("Reseal of a row that never settles: %v", err)
	}
	if v, _, err := serving.KVGet(ctx, "counter", "n"); err != nil || string(v) != strings.Repeat("x", n) {
		t.Fatalf("the counter reads %q, %v: want the last write (%d x)", v, err, n)
	}
}
