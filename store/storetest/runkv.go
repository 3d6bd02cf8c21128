package storetest

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// runKV: a KVRunAppender sets its key-value pairs in the transaction of the run write
// that carries them: with the run record and entries, or, when that write is refused,
// not at all (a workflow step's end must not outlive, nor be lost by, its call's end).
// Other stores are not held to it.
func runKV(t *testing.T, s loop.SessionStore) {
	ka, ok := s.(loop.KVRunAppender)
	if !ok {
		return
	}
	ctx := context.Background()
	rec := loop.RunRecord{ID: "r1", SessionID: "kvr", Started: t0, Status: loop.StatusCompleted, Reason: loop.ReasonDirectCall}
	if err := ka.AppendRunKV(ctx, rec, []loop.KVWrite{{Namespace: "t", Key: "k1", Value: []byte("one")}, {Namespace: "t", Key: "k0"}}, entries("kvr", "r1", 1, 2)...); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.KVGet(ctx, "t", "k1"); err != nil || !ok || string(v) != "one" {
		t.Fatalf("k1 = %q %v %v, want one", v, ok, err)
	}
	if v, ok, err := s.KVGet(ctx, "t", "k0"); err != nil || !ok || len(v) != 0 {
		t.Fatalf("k0 (no value) = %q %v %v, want an empty value", v, ok, err)
	}
	rec.ID = "r2"
	if err := ka.AppendRunKV(ctx, rec, []loop.KVWrite{{Namespace: "t", Key: "k1", Value: []byte("two")}, {Namespace: "t", Key: "k2", Value: []byte("two")}}, entries("kvr", "r2", 7, 1)...); err == nil {
		t.Fatal("a write with a gap was stored")
	}
	if v, _, _ := s.KVGet(ctx, "t", "k1"); string(v) != "one" {
		t.Fatalf("the refused write changed k1 to %q", v)
	}
	if _, ok, _ := s.KVGet(ctx, "t", "k2"); ok {
		t.Fatal("the refused write set k2")
	}
	if runs, _ := s.Runs(ctx, "kvr"); len(runs) != 1 || runs[0].ID != "r1" {
		t.Fatalf("runs %+v, want r1 alone", runs)
	}
}
