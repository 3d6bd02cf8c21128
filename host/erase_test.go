package host

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// Erasure erases while the host runs (issue 46): serve keeps its SQLite store open, and
// once EraseUser, DeleteSession and a memory delete answer, the erased words are in
// neither the database file nor its -wal file. Before, the -wal file kept them for as
// long as the process ran.
func TestErasedWordsLeaveTheSQLiteFilesWhileTheHostRuns(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns": [{"text": "noted"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("[agent]\nprovider = \"scripted\"\nmodel = \"m1\"\n[providers.scripted]\ncommand = %q\noptions = { script = \"script.json\" }\n"+
		"[store]\nkind = \"sqlite\"\npath = \"sessions.db\"\n[memory]\nenabled = true\n", scriptedBin)
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := Open(ctx, Options{Manifest: filepath.Join(dir, "agent.toml"), CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, r := range []struct{ session, user, text string }{
		{"a1", "ana", "my secret is KUMQUAT-4711"}, {"a2", "ana", "and LOQUAT-0815"}, {"s3", "bob", "bob says PAPAYA-2323"}} {
		if _, err := h.Agent.RunWith(ctx, loop.RunInput{SessionID: r.session, User: r.user, Messages: []loop.Message{loop.UserMessage(r.text)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ms, ok := h.Memory()
	if !ok {
		t.Fatal("no memory store")
	}
	now := time.Now()
	for _, m := range []memory.Entry{{ID: "m1", User: "ana", Text: "ana keeps QUINCE-1199"}, {ID: "m2", User: "bob", Text: "bob keeps DURIAN-5005"}} {
		m.Kind, m.Created, m.Updated = memory.KindFact, now, now
		if err := ms.AddMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{filepath.Join(dir, "sessions.db"), filepath.Join(dir, "sessions.db-wal")}
	held := func(word string) []string {
		var in []string
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(word)) {
				in = append(in, filepath.Base(f))
			}
		}
		return in
	}
	for _, w := range []string{"KUMQUAT-4711", "QUINCE-1199", "PAPAYA-2323", "DURIAN-5005"} {
		if len(held(w)) == 0 {
			t.Fatalf("%s is in no file before the erasure: the test proves nothing", w)
		}
	}
	res, err := h.EraseUser(ctx, "ana", "cli", false)
	if err != nil || len(res.Sessions) != 2 || res.Memories != 1 {
		t.Fatalf("erase: %+v %v", res, err)
	}
	for _, w := range []string{"KUMQUAT-4711", "LOQUAT-0815", "QUINCE-1199"} {
		if in := held(w); len(in) > 0 {
			t.Fatalf("after users erase, %s remains in %v", w, in)
		}
	}
	if err := h.DeleteSession(ctx, "s3", "api"); err != nil {
		t.Fatal(err)
	}
	if in := held("PAPAYA-2323"); len(in) > 0 {
		t.Fatalf("after a session delete, its words remain in %v", in)
	}
	if n, err := ms.DeleteMemory(ctx, memory.Filter{ID: "m2"}); err != nil || n != 1 {
		t.Fatalf("memory delete: %d %v", n, err)
	}
	if in := held("DURIAN-5005"); len(in) > 0 {
		t.Fatalf("after a memory delete, its words remain in %v", in)
	}
}
