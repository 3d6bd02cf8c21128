package storetest

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// kv: a missing key is absent; a value set (text, binary, empty) is read back as set;
// keys are per plugin.
func kv(t *testing.T, s loop.SessionStore) {
	ctx := context.Background()
	if _, ok, err := s.KVGet(ctx, "p", "k"); ok || err != nil {
		t.Fatalf("missing key: %v %v", ok, err)
	}
	for _, v := range [][]byte{[]byte("one"), {0, 0xff, 'x'}, {}} {
		if err := s.KVSet(ctx, "p", "k", v); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.KVGet(ctx, "p", "k")
		if !ok || err != nil || !reflect.DeepEqual(append([]byte{}, got...), v) {
			t.Fatalf("get after set %q: %q %v %v", v, got, ok, err)
		}
	}
	if _, ok, _ := s.KVGet(ctx, "other", "k"); ok {
		t.Fatal("a key is shared between plugins")
	}
	kvKeys(t, s)
}

// kvKeys: a lister lists one plugin's keys under a prefix, sorted, bounded; a prefix
// with LIKE's wildcards means itself.
func kvKeys(t *testing.T, s loop.SessionStore) {
	l, ok := s.(loop.KVLister)
	if !ok {
		t.Fatalf("%T lists no keys (loop.KVLister)", s)
	}
	ctx := context.Background()
	for _, k := range []string{"wf/b", "wf/a", "wf/c", "wf%/x", "wg/a", "w_/y"} {
		if err := s.KVSet(ctx, "lister", k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.KVSet(ctx, "other-plugin", "wf/z", []byte("v"))
	for _, c := range []struct {
		prefix string
		limit  int
		want   string
	}{{"wf/", -1, "wf/a,wf/b,wf/c"}, {"wf/", 2, "wf/a,wf/b"}, {"wf%", -1, "wf%/x"}, {"w_", -1, "w_/y"}, {"", -1, "w_/y,wf%/x,wf/a,wf/b,wf/c,wg/a"}, {"nope", -1, ""}} {
		got, err := l.KVKeys(ctx, "lister", c.prefix, c.limit)
		if err != nil || strings.Join(got, ",") != c.want {
			t.Fatalf("KVKeys(%q, %d) = %v %v, want %s", c.prefix, c.limit, got, err, c.want)
		}
	}
}
