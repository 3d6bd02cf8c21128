package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// Another process (here a second handle on the file) deletes a session this one loaded
// and writes it again with other words, as long as before: the head this store kept no
// longer anchors, and LoadHead reads the session whole instead of what follows the
// kept head. Appends by the other process to a kept session are read after the kept
// head.
func TestHeadCacheFollowsAnotherProcesssWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	a, b := mustOpen(t, path), mustOpen(t, path)
	ctx := context.Background()
	msg := func(seq int64, text string) loop.Entry {
		return loop.Entry{Seq: seq, RunID: "r", Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart(text)}}}
	}
	texts := func(h loop.SessionHead) (out []string) {
		for _, e := range h.Transcript {
			out = append(out, e.Message.Text())
		}
		return out
	}
	if err := b.Append(ctx, "s", msg(1, "old one"), msg(2, "old two")); err != nil {
		t.Fatal(err)
	}
	if h, err := a.LoadHead(ctx, "s"); err != nil || h.LastSeq != 2 || len(texts(h)) != 2 {
		t.Fatalf("head %+v %v", h, err)
	}
	if err := b.Append(ctx, "s", msg(3, "old three")); err != nil {
		t.Fatal(err)
	}
	if h, err := a.LoadHead(ctx, "s"); err != nil || h.LastSeq != 3 || texts(h)[2] != "old three" {
		t.Fatalf("after b's append: %v %v", texts(h), err)
	}
	if err := b.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "s", msg(1, "new one"), msg(2, "new two"), msg(3, "new three"), msg(4, "new four")); err != nil {
		t.Fatal(err)
	}
	h, err := a.LoadHead(ctx, "s")
	if got := texts(h); err != nil || h.LastSeq != 4 || len(got) != 4 || got[0] != "new one" || got[2] != "new three" {
		t.Fatalf("after b rewrote the session: %v (last %d) %v", got, h.LastSeq, err)
	}
}

func mustOpen(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
