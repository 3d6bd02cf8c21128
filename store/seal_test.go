package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/memory/memorytest"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/store/storetest"
)

func newRing(t *testing.T, lines ...string) *seal.Keys {
	t.Helper()
	k, err := seal.Parse(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKey(t *testing.T) string {
	t.Helper()
	k, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func openSealed(t *testing.T, path string, keys *seal.Keys) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLiteWith(path, store.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// An encrypted store behaves as any store: the same conformance suites pass.
func TestSealedSQLiteConforms(t *testing.T) {
	keys := newRing(t, newKey(t))
	t.Run("sessions", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) loop.SessionStore { return openSealed(t, filepath.Join(t.TempDir(), "s.db"), keys) })
	})
	t.Run("memory", func(t *testing.T) {
		memorytest.Run(t, func(t *testing.T) memory.Store { return openSealed(t, filepath.Join(t.TempDir(), "m.db"), keys) })
	})
}

// fileHas reports whether the database file or its WAL holds needle.
func fileHas(t *testing.T, path, needle string) bool {
	t.Helper()
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(needle)) {
			return true
		}
	}
	return false
}

func fill(t *testing.T, s *store.SQLite, secret string) {
	t.Helper()
	ctx := context.Background()
	e := loop.Entry{Seq: 1, RunID: "r1", Time: time.Now(), Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: "text", Text: secret + " prompt"}}}}
	if err := s.Append(ctx, "s1", e); err != nil {
		t.Fatal(err)
	}
	if err := s.KVSet(ctx, "notes", "k", []byte(secret+" value")); err != nil {
		t.Fatal(err)
	}
	// A run's note (a workflow step's end, in its call's run row).
	run := loop.RunRecord{ID: "r2", SessionID: "s2", Status: loop.StatusCompleted, Started: time.Now(), Ended: time.Now(), Note: secret + " noted"}
	if err := s.AppendRunKV(ctx, run, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAttachment(ctx, "s1", loop.Attachment{SHA256: "h1", MimeType: "text/plain", Data: []byte(secret + " attached")}, 1<<20); err != nil {
		t.Fatal(err)
	}
	m, err := memory.New("ana", "", memory.KindFact, secret+" lives in Lisbon", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m.Metadata = map[string]string{"source": secret + " meta"}
	if err := s.AddMemory(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, s *store.SQLite, secret string) {
	t.Helper()
	ctx := context.Background()
	es, err := s.Load(ctx, "s1")
	if err != nil || len(es) != 1 || es[0].Message.Text() != secret+" prompt" {
		t.Fatalf("Load = %+v, %v", es, err)
	}
	if v, ok, err := s.KVGet(ctx, "notes", "k"); err != nil || !ok || string(v) != secret+" value" {
		t.Fatalf("KVGet = %q %v %v", v, ok, err)
	}
	if runs, err := s.Runs(ctx, "s2"); err != nil || len(runs) != 1 || runs[0].Note != secret+" noted" {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	if a, err := s.Attachment(ctx, "s1", "h1"); err != nil || string(a.Data) != secret+" attached" {
		t.Fatalf("Attachment = %q, %v", a.Data, err)
	}
	hits, err := s.SearchMemory(ctx, memory.Query{User: "ana", Text: "where does she live? LISBON"})
	if err != nil || len(hits) != 1 || hits[0].Text != secret+" lives in Lisbon" || hits[0].Metadata["source"] != secret+" meta" {
		t.Fatalf("SearchMemory = %+v, %v", hits, err)
	}
	if hits, _ := s.SearchMemory(ctx, memory.Query{User: "bo", Text: "lisbon"}); len(hits) != 0 {
		t.Fatalf("another user found ana's memory: %+v", hits)
	}
}

// With keys, no prompt, plugin value, memory text or metadata reaches the file in
// clear, and all of it reads back; memory search still finds by word.
func TestSealedStoreKeepsNoPlaintext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openSealed(t, path, newRing(t, newKey(t)))
	fill(t, s, "zanzibar")
	check(t, s, "zanzibar")
	for _, needle := range []string{"zanzibar", "Lisbon", "lisbon"} {
		if fileHas(t, path, needle) {
			t.Fatalf("the database file holds %q in clear", needle)
		}
	}
	s.Close()
	// Without keys the store does not open; with a ring that lacks the key, reads fail.
	if _, err := store.OpenSQLite(path); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("open without keys: %v", err)
	}
	other := openSealed(t, path, newRing(t, newKey(t)))
	if _, err := other.Load(context.Background(), "s1"); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("load with another key: %v", err)
	}
}

// Someone with write access to the file but not the key can neither move a sealed entry
// into another session nor slip a plain one into a fully sealed store.
func TestSealedEntriesCannotBeMovedOrDowngraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	keys := newRing(t, newKey(t))
	s := openSealed(t, path, keys)
	ctx := context.Background()
	for _, sid := range []string{"a", "b"} {
		e := loop.Entry{Seq: 1, RunID: "r", Time: time.Now(), Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: "text", Text: "in " + sid}}}}
		if err := s.Append(ctx, sid, e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE entries SET body = (SELECT body FROM entries WHERE session = 'a') WHERE session = 'b'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO entries (sid, session, seq, run_id, time, kind, body) VALUES ((SELECT sid FROM session_keys WHERE id = 'a'), 'a', 2, 'r', '2026-01-01T00:00:00Z', 'message', '{"seq":2,"kind":"message","message":{"role":"user","content":[{"type":"text","text":"forged"}]}}')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = openSealed(t, path, keys)
	if _, err := s.Load(ctx, "b"); err == nil || !strings.Contains(err.Error(), "moved from another row") {
		t.Fatalf("a body moved from session a opened in b: %v", err)
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, seal.ErrNotSealed) {
		t.Fatalf("a forged plain entry in a sealed store: %v", err)
	}
}

// Keys added to a store with data: old values still read; Reseal seals them; rotating
// to a new key (new first, old kept) and resealing leaves nothing under the old key, so
// the new key alone opens everything.
func TestRotateKeyResealsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	plain := openSealed(t, path, nil)
	fill(t, plain, "zanzibar")
	plain.Close()
	if !fileHas(t, path, "zanzibar") {
		t.Fatal("the plain store does not hold its text: the test proves nothing")
	}
	k1, k2 := newKey(t), newKey(t)
	s := openSealed(t, path, newRing(t, k1))
	check(t, s, "zanzibar")
	st, err := s.Reseal(context.Background())
	if err != nil || st.Entries != 1 || st.Values != 1 || st.Memories != 1 || st.Attachments != 1 || st.RunNotes != 1 {
		t.Fatalf("Reseal = %+v, %v", st, err)
	}
	check(t, s, "zanzibar")
	if st, _ := s.Reseal(context.Background()); st.Entries+st.Values+st.Memories+st.Attachments+st.RunNotes != 0 {
		t.Fatalf("a second Reseal found work: %+v", st)
	}
	s.Close()
	s = openSealed(t, path, newRing(t, k2, k1))
	check(t, s, "zanzibar") // found under the old key's index too
	if st, err := s.Reseal(context.Background()); err != nil || st.Entries != 1 || st.Memories != 1 || st.Attachments != 1 || st.RunNotes != 1 || st.Key != strings.Split(k2, ":")[0] {
		t.Fatalf("rotation Reseal = %+v, %v", st, err)
	}
	s.Close()
	check(t, openSealed(t, path, newRing(t, k2)), "zanzibar")
}
