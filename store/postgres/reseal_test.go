package postgres

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// Reseal looped over four new keys while writers use the store: counters incremented
// (read, add one, write), numbered entries appended, memories added. The writers' ring
// is read from a key file (as serve's is) and learns each new key by Reload (SIGHUP)
// or by meeting a value under a key it lacks. No increment, entry or memory is lost,
// and the last key alone opens every one.
func TestPostgresResealLoopedWhileWritingLosesNothing(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDatabase(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.key")
	writeRing := func(lines ...string) {
		if err := os.WriteFile(path+".new", []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := seal.NewKey()
	lines := []string{first}
	writeRing(lines...)
	fileRing := func() *seal.Keys {
		k, err := seal.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	w := openKeyed(t, url, fileRing())
	watching, unwatch := context.WithCancel(ctx) // as serve does, polling the key file every 2 s
	watched := make(chan struct{})
	go func() { defer close(watched); w.Keys().Watch(watching, 2*time.Second, nil, t.Logf) }()
	defer func() { unwatch(); <-watched }()
	const counters = 3
	var mu sync.Mutex
	acked := map[string]int{} // counter key or "entries"/"memories": writes acknowledged
	var firstErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	spawn := func(name string, do func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := do(i); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, fmt.Errorf("%s %d: %w", name, i, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				acked[name]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // pacing, so the tables Reseal walks stay small
			}
		}()
	}
	for c := range counters {
		key := fmt.Sprintf("c%d", c)
		spawn(key, func(int) error {
			v, _, err := w.KVGet(ctx, "counter", key)
			if err != nil {
				return err
			}
			n, _ := strconv.Atoi(string(v))
			return w.KVSet(ctx, "counter", key, []byte(strconv.Itoa(n+1)))
		})
	}
	spawn("entries", func(i int) error {
		return w.Append(ctx, "s", loop.Entry{Seq: int64(i + 1), RunID: "r", Time: time.Now(), Kind: loop.EntryMessage,
			Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: "text", Text: fmt.Sprintf("msg [%d]", i)}}}})
	})
	spawn("memories", func(i int) error {
		m, err := memory.New("ana", "", memory.KindFact, fmt.Sprintf("memo %d", i), time.Now())
		if err == nil {
			err = w.AddMemory(ctx, m)
		}
		return err
	})
	progress := func() {
		t.Helper()
		mu.Lock()
		base := maps.Clone(acked)
		mu.Unlock()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			mu.Lock()
			err, ok := firstErr, len(acked) == counters+2
			for k, n := range acked {
				ok = ok && n >= base[k]+3
			}
			mu.Unlock()
			switch {
			case err != nil:
				t.Fatal(err)
			case ok:
				return
			case time.Now().After(deadline):
				t.Fatalf("no progress: %v", acked)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	changed := 0
	for r := 1; r <= 4; r++ {
		progress()
		k, _ := seal.NewKey()
		lines = append([]string{k}, lines...)
		writeRing(lines...)
		if r%2 == 1 {
			if err := w.Keys().Reload(); err != nil { // what SIGHUP does
				t.Fatal(err)
			}
		} // else: the writers see the file change, or meet a value under the new key
		rot := openKeyed(t, url, fileRing())
		// Without SIGHUP the writers take the new ring at their watch's next look (every
		// 2 s) or when they meet a value under the new key: until then they keep writing
		// under the old one, so the passes that count start once the writers seal with
		// the new key (a pass that finds nothing before that proves nothing: the next
		// write under the old key comes after it).
		newID := strings.SplitN(k, ":", 2)[0]
		for wait := time.Now().Add(3 * time.Minute); w.Keys().Current() != newID; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(wait) {
				t.Fatalf("rotation %d: the writers never took key %s", r, newID)
			}
		}
		start := time.Now()
		for pass := 1; ; pass++ {
			st, err := rot.Reseal(ctx)
			if err != nil {
				t.Fatalf("rotation %d pass %d: %v", r, pass, err)
			}
			changed += st.Changed
			t.Logf("rotation %d pass %d: %+v", r, pass, st)
			if pass > 1 && st.Entries+st.Values+st.Memories == 0 {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("rotation %d: still re-sealing after %d passes in %s: %+v", r, pass, time.Since(start), st)
			}
		}
		rot.Close()
	}
	writeRing(lines[0])
	if err := w.Keys().Reload(); err != nil {
		t.Fatal(err)
	}
	progress()
	close(stop)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("acknowledged %v; rows changed meanwhile: %d", acked, changed)
	only := openKeyed(t, url, ring(t, lines[0]))
	for c := range counters {
		key := fmt.Sprintf("c%d", c)
		if v, _, err := only.KVGet(ctx, "counter", key); err != nil || string(v) != strconv.Itoa(acked[key]) {
			t.Fatalf("counter %s = %q (%v), %d increments acknowledged", key, v, err, acked[key])
		}
	}
	es, err := only.Load(ctx, "s")
	if err != nil || len(es) != acked["entries"] {
		t.Fatalf("%d entries (%v), %d acknowledged", len(es), err, acked["entries"])
	}
	for i, e := range es {
		if e.Message.Text() != fmt.Sprintf("msg [%d]", i) {
			t.Fatalf("entry %d reads %q", i+1, e.Message.Text())
		}
	}
	ms, err := only.ListMemory(ctx, memory.Filter{User: "ana"})
	if err != nil || len(ms) != acked["memories"] {
		t.Fatalf("%d memories (%v), %d acknowledged", len(ms), err, acked["memories"])
	}
}
