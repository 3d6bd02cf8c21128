package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

// indexed opens a store holding n memories of each of users users (32-dimension vectors
// of the fixed set) with their indexes built.
func indexed(t *testing.T, n, users int) (*SQLite, *topics) {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tp := newTopics(7, 32, 20, 5)
	fillMemories(t, s, n*users, users, tp)
	for u := range users {
		if err := BuildIndex(context.Background(), sqliteIndex{s}, IndexScope{fmt.Sprintf("u%d", u), ""}); err != nil {
			t.Fatal(err)
		}
	}
	return s, tp
}

func indexRows(t *testing.T, s *SQLite, owner string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM memory_index WHERE owner = ?`, owner).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func ids(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// A search of a scope without an index that reads memory.IndexFrom vectors or more asks
// the builder for one; once built, searches read the nearest lists and find what exact
// search finds (on this clustered set, all of it).
func TestVectorIndexIsBuiltBySearchesAndFindsWhatExactSearchFinds(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := newTopics(7, 32, 20, 5)
	fillMemories(t, s, memory.IndexFrom+100, 1, tp)
	ctx := context.Background()
	q := memory.Query{User: "u0", Limit: 5, Vector: tp.vector(false)}
	exact, err := s.searchVector(ctx, q) // no index yet: exact, and asks for one
	if err != nil || len(exact) != 5 {
		t.Fatalf("%d hits, %v", len(exact), err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for indexRows(t, s, "u0") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no index two minutes after a search asked for one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := s.searchVector(ctx, q)
	if err != nil || !slices.Equal(ids(got), ids(exact)) {
		t.Fatalf("indexed search %v (%v), exact %v", ids(got), err, ids(exact))
	}
	var unlisted int
	if err := s.db.QueryRow(`SELECT count(*) FROM memories WHERE list IS NULL`).Scan(&unlisted); err != nil || unlisted != 0 {
		t.Fatalf("%d memories without a list after the build (%v)", unlisted, err)
	}
}

// A memory added after the training, or re-embedded, is a straggler: every search reads
// it, so it is found at once; the next build gives it a list of the index.
func TestVectorIndexFindsMemoriesAddedOrReembeddedAfterTraining(t *testing.T) {
	s, tp := indexed(t, memory.IndexFrom, 1)
	ctx := context.Background()
	v := tp.vector(false)
	e, _ := memory.New("u0", "", memory.KindFact, "added after the training", time.Now())
	e.Vector = v
	if err := s.AddMemory(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.searchVector(ctx, memory.Query{User: "u0", Limit: 1, Vector: v})
	if err != nil || len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("search of the added memory's own vector: %v %v", ids(got), err)
	}
	w := tp.vector(false)
	if err := s.SetVector(ctx, "mem_0000007", w, "m"); err != nil {
		t.Fatal(err)
	}
	got, err = s.searchVector(ctx, memory.Query{User: "u0", Limit: 1, Vector: w})
	if err != nil || len(got) != 1 || got[0].ID != "mem_0000007" {
		t.Fatalf("search of the re-embedded memory's new vector: %v %v", ids(got), err)
	}
	if err := BuildIndex(ctx, sqliteIndex{s}, IndexScope{"u0", ""}); err != nil {
		t.Fatal(err)
	}
	st, _, err := sqliteIndex{s}.IndexState(ctx, IndexScope{"u0", ""})
	if err != nil || st.Vectors != memory.IndexFrom+2 {
		t.Fatalf("index holds %d vectors after assigning the stragglers (%v), want %d", st.Vectors, err, memory.IndexFrom+2)
	}
	for _, id := range []string{e.ID, "mem_0000007"} {
		var list int64
		if err := s.db.QueryRow(`SELECT list FROM memories WHERE id = ?`, id).Scan(&list); err != nil || list < st.Lo || list > st.Hi {
			t.Fatalf("%s in list %d (%v), not one of the index's %d..%d", id, list, err, st.Lo, st.Hi)
		}
	}
}

// Each scope has its own index: a search on behalf of one user reads only that user's
// lists, even where another user's memories are the nearest.
func TestVectorIndexKeepsUsersApart(t *testing.T) {
	s, tp := indexed(t, memory.IndexFrom, 2)
	ctx := context.Background()
	for range 20 {
		got, err := s.searchVector(ctx, memory.Query{User: "u1", Limit: 5, Vector: tp.vector(false)})
		if err != nil || len(got) != 5 {
			t.Fatalf("%d hits, %v", len(got), err)
		}
		for _, h := range got {
			if h.User != "u1" {
				t.Fatalf("u1's search found %s of %q", h.ID, h.User)
			}
		}
	}
}

// smallIndex stores n memories of each of users users and activates an index of one
// list for each: what a build does past memory.IndexFrom, on few memories, so the
// erasure rules are tested without deleting thousands.
func smallIndex(t *testing.T, n, users int) *SQLite {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fillMemories(t, s, n*users, users, newTopics(7, 32, 20, 5))
	for u := range users {
		if err := activateSmall(s, sqliteIndex{s}, fmt.Sprintf("u%d", u)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func activateSmall(s *SQLite, db IndexDB, owner string) error {
	ctx := context.Background()
	sc := IndexScope{owner, ""}
	var ids []string
	var vs [][]float32
	err := sqliteIndex{s}.ScanVectors(ctx, sc, nil, func(id string, b []byte) error {
		v, err := memory.DecodeVector(b)
		ids, vs = append(ids, id), append(vs, v)
		return err
	})
	if err != nil {
		return err
	}
	st := &IndexState{Lo: 100, Hi: 100, Trained: len(vs), Vectors: len(vs), IVF: memory.TrainIVF(vs, 1, 1)}
	lists := make([]int64, len(ids))
	for i := range lists {
		lists[i] = st.Lo
	}
	if err := db.SetLists(ctx, sc, ids, lists); err != nil {
		return err
	}
	return db.Activate(ctx, sc, st)
}

// Deleting a user's memories deletes the index of every scope left without memories
// (its centroids are averages of their vectors), in the same transaction; another
// user's index stays, and so does the index of a scope that keeps memories.
func TestVectorIndexIsErasedWithItsMemories(t *testing.T) {
	s := smallIndex(t, 10, 3)
	ctx := context.Background()
	if n, err := s.DeleteMemory(ctx, memory.Filter{User: "u0"}); err != nil || n != 10 {
		t.Fatalf("deleted %d (%v)", n, err)
	}
	if n, err := s.DeleteMemory(ctx, memory.Filter{ID: "mem_0000001"}); err != nil || n != 1 { // one of u1's
		t.Fatalf("deleted %d (%v)", n, err)
	}
	if indexRows(t, s, "u0") != 0 || indexRows(t, s, "u1") != 1 || indexRows(t, s, "u2") != 1 {
		t.Fatalf("index rows after erasing u0 and one of u1's: %d, %d, %d; want 0, 1, 1", indexRows(t, s, "u0"), indexRows(t, s, "u1"), indexRows(t, s, "u2"))
	}
}

// erasingDB erases the scope's memories while a training is between its assignment and
// its activation, as a user's erasure in another request would.
type erasingDB struct {
	sqliteIndex
}

func (x erasingDB) SetLists(ctx context.Context, sc IndexScope, ids []string, lists []int64) error {
	if err := x.sqliteIndex.SetLists(ctx, sc, ids, lists); err != nil {
		return err
	}
	_, err := x.s.DeleteMemory(ctx, memory.Filter{User: sc.Owner})
	return err
}

// A training that finishes after its scope's memories were erased activates nothing:
// the erasure is not undone by a build that read the vectors before it.
func TestVectorIndexTrainedDuringAnErasureKeepsNoCentroids(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillMemories(t, s, 10, 1, newTopics(7, 32, 20, 5))
	if err := activateSmall(s, erasingDB{sqliteIndex{s}}, "u0"); err != nil {
		t.Fatal(err)
	}
	if n := indexRows(t, s, "u0"); n != 0 {
		t.Fatalf("%d index rows for an erased user", n)
	}
}

// A sealed store keeps no index (its vectors are sealed, and lists would tell which
// memories are alike): a search reads and opens every vector, asks for no build, and
// finds what is nearest.
func TestSealedStoreKeepsNoVectorIndex(t *testing.T) {
	key, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSQLiteWith(filepath.Join(t.TempDir(), "m.db"), Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := newTopics(7, 32, 20, 5)
	ctx := context.Background()
	at := time.Now().UTC().Format(timeText)
	var want string
	var wantV []float32
	err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		for i := range memory.IndexFrom + 10 {
			id := fmt.Sprintf("mem_%07d", i)
			v := tp.vector(false)
			text, terms, meta := s.sealMemory(id, "sealed memory", []byte("{}"))
			if _, err := tx.ExecContext(ctx, `INSERT INTO memories (id, owner, agent, scope, kind, text, metadata, session, run_id, created, updated, terms, vector)
VALUES (?, 'u0', '', ?, 'fact', ?, ?, '', '', ?, ?, ?, ?)`, id, scopeToken("u0", ""), text, meta, at, at, terms, s.sealVector(id, v)); err != nil {
				return err
			}
			if i == 1234 {
				want, wantV = id, v
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.searchVector(ctx, memory.Query{User: "u0", Limit: 1, Vector: wantV})
	if err != nil || len(got) != 1 || got[0].ID != want {
		t.Fatalf("sealed search: %v %v, want %s", ids(got), err, want)
	}
	s.index.Close() // waits for a build, had the search asked for one
	if n := indexRows(t, s, "u0"); n != 0 {
		t.Fatalf("a sealed store built an index (%d rows)", n)
	}
}

// A store that built an index before it had keys drops it when opened with keys: its
// centroids are averages of plain vectors, its lists tell which memories are alike.
func TestVectorIndexIsDroppedWhenTheStoreGetsKeys(t *testing.T) {
	s := smallIndex(t, 10, 1)
	path := s.Path()
	s.Close()
	key, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLiteWith(path, Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var listed int
	if err := s.db.QueryRow(`SELECT count(*) FROM memories WHERE list IS NOT NULL`).Scan(&listed); err != nil || listed != 0 || indexRows(t, s, "u0") != 0 {
		t.Fatalf("after opening with keys: %d memories with a list, %d index rows (%v)", listed, indexRows(t, s, "u0"), err)
	}
}
