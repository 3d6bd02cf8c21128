package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
)

// openSQLiteHost opens a host on a SQLite store with extra manifest tables.
func openSQLiteHost(t *testing.T, extra string) *Host {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("[agent]\nprovider = \"scripted\"\nmodel = \"m1\"\n[providers.scripted]\ncommand = %q\noptions = { script = \"script.json\" }\n[store]\nkind = \"sqlite\"\npath = \"sessions.db\"\n%s", scriptedBin, extra)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Open(context.Background(), Options{Manifest: p, CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func addAs(h *Host, user, text string) error {
	ms, _ := h.Memory()
	e, err := memory.New(user, "", memory.KindFact, text, time.Now())
	if err != nil {
		return err
	}
	return ms.AddMemory(context.Background(), e)
}

// The attack of issue 46: one user adds 3,000 memories of 4 KiB, 16 at a time. The
// default quota (1 MiB of text) admits exactly 256 of them and refuses the rest with
// memory.ErrQuota, whose message names the quota's keys; the store holds 256. Another
// user is not affected, and a user who deletes memories may add as many again.
func TestMemoryQuotaRefusesOneUsersFlood(t *testing.T) {
	h := openSQLiteHost(t, "[memory]\nenabled = true\n")
	text := strings.Repeat("x", memory.MaxText-8)
	var mu sync.Mutex
	var ok, refused int
	var other error
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < 3000; i += 16 {
				err := addAs(h, "mallory", fmt.Sprintf("%s %07d", text, i))
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, memory.ErrQuota) && strings.Contains(err.Error(), "max_bytes_per_user"):
					refused++
				default:
					other = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if other != nil || ok != 256 || refused != 3000-256 {
		t.Fatalf("%d added, %d refused by the quota, other error %v; want 256 and %d", ok, refused, other, 3000-256)
	}
	raw := h.Store.(memory.Store)
	if es, err := raw.ListMemory(context.Background(), memory.Filter{User: "mallory"}); err != nil || len(es) != 256 {
		t.Fatalf("the store holds %d of mallory's memories (%v), want 256", len(es), err)
	}
	if err := addAs(h, "ana", "Ana drinks tea"); err != nil {
		t.Fatalf("another user: %v", err)
	}
	ms, _ := h.Memory()
	es, _ := ms.ListMemory(context.Background(), memory.Filter{User: "mallory", Limit: 3})
	for _, e := range es {
		if n, err := ms.DeleteMemory(context.Background(), memory.Filter{User: "mallory", ID: e.ID}); n != 1 || err != nil {
			t.Fatalf("delete: %d %v", n, err)
		}
	}
	for i := range 4 {
		err := addAs(h, "mallory", fmt.Sprintf("%s after%d", text, i))
		if (i < 3) != (err == nil) {
			t.Fatalf("add %d after deleting 3: %v", i+1, err)
		}
	}
}

// The count quota (max_per_user) holds as the bytes one does; memories deleted behind
// the service's back (the CLI beside serve) are seen once the count is older than
// recountAfter, before a refusal; -1 is no limit; a quota below -1 is a manifest error.
func TestMemoryCountQuota(t *testing.T) {
	h := openSQLiteHost(t, "[memory]\nenabled = true\nmax_per_user = 3\nmax_bytes_per_user = -1\n")
	for i := range 4 {
		err := addAs(h, "ana", fmt.Sprintf("fact %d", i))
		if i < 3 && err != nil || i == 3 && (!errors.Is(err, memory.ErrQuota) || !strings.Contains(err.Error(), "3 memories, no byte limit")) {
			t.Fatalf("add %d: %v", i+1, err)
		}
	}
	raw := h.Store.(memory.Store)
	if n, err := raw.DeleteMemory(context.Background(), memory.Filter{User: "ana"}); n != 3 || err != nil {
		t.Fatalf("delete behind the service: %d %v", n, err)
	}
	svc := h.memSvc
	svc.now = func() time.Time { return time.Now().Add(recountAfter) }
	if err := addAs(h, "ana", "fact after"); err != nil {
		t.Fatalf("after the store was emptied behind the service: %v", err)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(fmt.Sprintf("[agent]\nprovider = \"scripted\"\n[providers.scripted]\ncommand = %q\n[memory]\nenabled = true\nmax_per_user = -2\n", scriptedBin)), 0o644)
	if _, err := Open(context.Background(), Options{Manifest: p, CacheDir: wasmCache}); err == nil || !strings.Contains(err.Error(), "memory.max_per_user") {
		t.Fatalf("max_per_user = -2: %v", err)
	}
}

// With [redact] at the input stage, what is added through the service is redacted
// before the store (and the embeddings) see it: text and metadata, the look-alikes
// included. A memory stored before [redact] was set is redacted on the way out, by
// listing and by search, so it reaches neither a client nor the system message as it
// was. Redaction that makes a text too long is refused as invalid, not stored cut.
func TestMemoryRedactedInAndOut(t *testing.T) {
	h := openSQLiteHost(t, "[memory]\nenabled = true\n[redact]\nstages = [\"input\"]\n")
	ms, _ := h.Memory()
	e, _ := memory.New("ana", "", memory.KindFact, "Ana is ana\uff20example.org, card 4111\u00a01111\u00a01111\u00a01111", time.Now())
	e.Metadata = map[string]string{"source": "b\u200bob@example.com"}
	if err := ms.AddMemory(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	raw := h.Store.(memory.Store)
	old, _ := memory.New("ana", "", memory.KindFact, "Ana's old address ana@old.example.com", time.Now())
	if err := raw.AddMemory(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	stored, _ := raw.ListMemory(context.Background(), memory.Filter{ID: e.ID})
	if len(stored) != 1 || stored[0].Text != "Ana is [email], card [card]" || stored[0].Metadata["source"] != "[email]" {
		t.Fatalf("stored: %+v", stored)
	}
	listed, _ := ms.ListMemory(context.Background(), memory.Filter{User: "ana"})
	hits, _ := ms.SearchMemory(context.Background(), memory.Query{User: "ana", Text: "address"})
	if len(listed) != 2 || len(hits) != 1 || hits[0].Text != "Ana's old address [email]" {
		t.Fatalf("read: %+v %+v", listed, hits)
	}
	for _, l := range listed {
		if strings.Contains(l.Text, "example") {
			t.Fatalf("listed unredacted: %q", l.Text)
		}
	}
	long := strings.Repeat("a@b.io ", memory.MaxText/7)
	if err := addAs(h, "ana", long); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("a text redaction makes too long: %v", err)
	}
}
