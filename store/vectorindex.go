package store

import (
	"context"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/agenthost/agenthost/memory"
)

// The vector index (memory/ivf.go's IVF), kept in SQL by both stores: per scope (a
// memory's owner and agent, the pair a search's visibility is made of) one row of
// centroids, and per memory the id of its list, indexed with the scope. List ids are
// Lo..Hi of the scope's row; each training takes ids above the last ones, so a memory
// whose list is not in Lo..Hi (NULL: added or re-embedded since; an older training's;
// a training's that is not finished) is a straggler, which every search reads exactly.
// So nothing is ever missed: an add needs no index work, a training or an assignment
// running in another process (or killed halfway) leaves stragglers, not wrong lists.
// List NoList marks a memory without a vector of the index's length.
//
// This file is the part both stores share: the rules of when to train and the search
// over an IndexDB, which each store implements in its SQL.

// NoList is the list of a memory an index does not hold (no vector, or one of another
// length than the index's): searches of the index's length skip it.
const NoList = -1

// Straggler bounds: a search that reads more stragglers than assignAfter asks the
// builder to give them lists; an index is trained again when it holds twice the vectors
// it was trained on (so lists grow as √n).
const assignAfter = 256

// IndexScope is whose memories an index holds.
type IndexScope struct{ Owner, Agent string }

// IndexState is a scope's index as stored.
type IndexState struct {
	Lo, Hi  int64 // the list ids of this training
	Trained int   // vectors at training
	Vectors int   // vectors with a list (trained and assigned since)
	IVF     memory.IVF
}

// Probe is the list ids a search of v reads in st.
func (st *IndexState) Probe(v []float32) []int64 {
	near := st.IVF.Nearest(v, memory.Probes(st.IVF.Len()))
	ids := make([]int64, len(near))
	for i, j := range near {
		ids[i] = st.Lo + int64(j)
	}
	return ids
}

// IndexDB is what a store does in SQL for the index.
type IndexDB interface {
	// IndexState reads a scope's index (ok false: none). The store may keep the decoded
	// centroids while Lo and Hi are unchanged.
	IndexState(ctx context.Context, sc IndexScope) (st *IndexState, ok bool, err error)
	// ScanVectors calls fn with every memory of sc that has a vector, or with st, only
	// the stragglers (list neither NoList nor in st.Lo..st.Hi). b is valid during the
	// call only.
	ScanVectors(ctx context.Context, sc IndexScope, st *IndexState, fn func(id string, b []byte) error) error
	// SearchScan calls fn with the memories of sc of kind ("" any) that have a vector:
	// with st, those in the lists probe and the stragglers (straggler true); without,
	// all (straggler true). b is the vector, opened, valid during the call only.
	// id and b are valid during the call only.
	SearchScan(ctx context.Context, sc IndexScope, kind memory.Kind, st *IndexState, probe []int64, fn func(id, b []byte, straggler bool)) error
	// SetLists stores lists[i] as the list of ids[i] (ids deleted meanwhile: no error).
	SetLists(ctx context.Context, sc IndexScope, ids []string, lists []int64) error
	// Activate makes st the scope's index and NoList the list of its memories without a
	// vector, if sc still has memories: in one transaction that an erasure of sc's
	// memories (which deletes its index) is ordered with, so an erased scope keeps no
	// centroids.
	Activate(ctx context.Context, sc IndexScope, st *IndexState) error
	// Assigned adds n to the scope's Vectors if its index is still st's training.
	Assigned(ctx context.Context, sc IndexScope, st *IndexState, n int) error
}

// IndexScorer is an IndexDB that scores where it reads (the SQLite store, which would
// otherwise copy every vector out of the database): SearchScore is SearchScan calling fn
// with memory.CosineUnit(b, unit) instead of b.
type IndexScorer interface {
	SearchScore(ctx context.Context, sc IndexScope, kind memory.Kind, st *IndexState, probe []int64, unit []float32, fn func(id []byte, score float64, straggler bool)) error
}

// BuildIndex brings sc's index up to date: trains it when it has none and holds
// memory.IndexFrom vectors or more, or when it has grown to twice its training; gives the
// stragglers lists otherwise. Concurrent builds (two processes) are safe, since a
// list outside Lo..Hi is a straggler: the loser's work is undone by the next build.
func BuildIndex(ctx context.Context, db IndexDB, sc IndexScope) error {
	st, ok, err := db.IndexState(ctx, sc)
	if err != nil {
		return err
	}
	if ok && st.Vectors < 2*st.Trained {
		var ids []string
		var lists []int64
		err := db.ScanVectors(ctx, sc, st, func(id string, b []byte) error {
			ids, lists = append(ids, id), append(lists, assign(st, b))
			return nil
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := db.SetLists(ctx, sc, ids, lists); err != nil {
			return err
		}
		if err := db.Assigned(ctx, sc, st, len(ids)); err != nil || st.Vectors+len(ids) < 2*st.Trained {
			return err
		}
	}
	return train(ctx, db, sc, st)
}

// train clusters the vectors of sc of the most common length, from a seeded sample,
// gives every memory its list, then activates the new lists. It reads the vectors three
// times (their lengths, the sample, the assignment) rather than holding them all.
func train(ctx context.Context, db IndexDB, sc IndexScope, old *IndexState) error {
	d, n, err := commonDims(ctx, db, sc)
	if err != nil || d == 0 || n < memory.IndexFrom {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(sc.Owner + "\x00" + sc.Agent))
	seed := h.Sum64()
	k := memory.Lists(n)
	sample, err := sampleVectors(ctx, db, sc, d, k*memory.SamplePerList, seed)
	if err != nil {
		return err
	}
	ivf := memory.TrainIVF(sample, k, seed)
	if ivf.Len() == 0 {
		return nil
	}
	lo := time.Now().UnixMicro() // above any earlier training's ids, even one erased since
	if old != nil {
		lo = max(lo, old.Hi+1)
	}
	st := &IndexState{Lo: lo, Hi: lo + int64(ivf.Len()) - 1, IVF: ivf}
	var ids []string
	var lists []int64
	err = db.ScanVectors(ctx, sc, nil, func(id string, b []byte) error {
		ids, lists = append(ids, id), append(lists, assign(st, b))
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range lists {
		if l != NoList {
			st.Trained++
		}
	}
	st.Vectors = st.Trained
	if err := db.SetLists(ctx, sc, ids, lists); err != nil {
		return err
	}
	return db.Activate(ctx, sc, st)
}

// commonDims is the most common vector length of sc (the shorter on a tie) and how many
// vectors have it.
func commonDims(ctx context.Context, db IndexDB, sc IndexScope) (d, n int, err error) {
	dims := map[int]int{}
	err = db.ScanVectors(ctx, sc, nil, func(_ string, b []byte) error {
		dims[len(b)/4]++
		return nil
	})
	for l, c := range dims {
		if l > 0 && (c > dims[d] || c == dims[d] && l < d) {
			d = l
		}
	}
	return d, dims[d], err
}

// sampleVectors keeps at most size vectors of length d from sc, each with the same
// chance (reservoir sampling, seeded: the same vectors give the same sample).
func sampleVectors(ctx context.Context, db IndexDB, sc IndexScope, d, size int, seed uint64) ([][]float32, error) {
	sample, seen := make([][]float32, 0, size), 0
	rng := rand.New(rand.NewPCG(seed, 1))
	err := db.ScanVectors(ctx, sc, nil, func(_ string, b []byte) error {
		if len(b) != 4*d {
			return nil
		}
		seen++
		if len(sample) < cap(sample) {
			if v, err := memory.DecodeVector(b); err == nil {
				sample = append(sample, v)
			}
		} else if j := rng.IntN(seen); j < len(sample) {
			if v, err := memory.DecodeVector(b); err == nil {
				sample[j] = v
			}
		}
		return nil
	})
	return sample, err
}

func assign(st *IndexState, b []byte) int64 {
	v, err := memory.DecodeVector(b)
	if err != nil || len(v) != st.IVF.Dims {
		return NoList
	}
	return st.Lo + int64(st.IVF.Assign(v))
}

// IndexBuilder runs BuildIndex in the background for the scopes searches ask it to
// (Want), one at a time, each scope queued once: a search never waits for an index.
type IndexBuilder struct {
	db     IndexDB
	log    func() *slog.Logger
	mu     sync.Mutex
	queued map[IndexScope]bool
	order  []IndexScope
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	busy   bool
}

// NewIndexBuilder returns a builder of db's indexes; Close stops it.
func NewIndexBuilder(db IndexDB, log func() *slog.Logger) *IndexBuilder {
	ctx, cancel := context.WithCancel(context.Background())
	return &IndexBuilder{db: db, log: log, queued: map[IndexScope]bool{}, ctx: ctx, cancel: cancel}
}

// Want queues sc for a build, unless it is queued already or the builder is closed.
func (b *IndexBuilder) Want(sc IndexScope) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued[sc] || b.ctx.Err() != nil {
		return
	}
	b.queued[sc] = true
	b.order = append(b.order, sc)
	if !b.busy {
		b.busy = true
		b.wg.Add(1)
		go b.run()
	}
}

func (b *IndexBuilder) run() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		if len(b.order) == 0 || b.ctx.Err() != nil {
			b.busy = false
			b.mu.Unlock()
			return
		}
		sc := b.order[0]
		b.order = b.order[1:]
		b.mu.Unlock()
		if err := BuildIndex(b.ctx, b.db, sc); err != nil && b.ctx.Err() == nil {
			b.log().Warn("memory vector index: build failed; searches stay exact", "owner", sc.Owner, "agent", sc.Agent, "err", err)
		}
		b.mu.Lock()
		delete(b.queued, sc)
		b.mu.Unlock()
	}
}

// Close stops the builder and waits for a build under way to stop.
func (b *IndexBuilder) Close() {
	b.cancel()
	b.wg.Wait()
}

// VisibleScopes are the scopes whose memories a search by q may see
// (memory.Query.Visible): the user's own, the user's with q's agent, the agent's shared.
func VisibleScopes(q memory.Query) []IndexScope {
	var out []IndexScope
	if q.User != "" {
		out = append(out, IndexScope{q.User, ""})
		if q.Agent != "" {
			out = append(out, IndexScope{q.User, q.Agent})
		}
	}
	if q.Agent != "" {
		out = append(out, IndexScope{"", q.Agent})
	}
	return out
}

// SearchVectors scores by similarity to q.Vector the memories q may see, reading per
// scope the nearest lists of its index and its stragglers, or every vector of a scope
// without an index (or of an index of another length than q.Vector's), and asks b (nil:
// the store keeps no index) to build the indexes that need it. Best q.Max(), best first.
func SearchVectors(ctx context.Context, db IndexDB, b *IndexBuilder, q memory.Query) ([]memory.Scored, error) {
	u := memory.Unit(q.Vector)
	top := topScores{limit: q.Max()}
	for _, sc := range VisibleScopes(q) {
		var st *IndexState
		var probe []int64
		exists := false
		if b != nil {
			s, ok, err := db.IndexState(ctx, sc)
			if err != nil {
				return nil, err
			}
			exists = ok
			if ok && s.IVF.Dims == len(q.Vector) {
				st, probe = s, s.Probe(q.Vector)
			}
		}
		stragglers := 0
		add := func(id []byte, score float64, straggler bool) {
			if straggler {
				stragglers++
			}
			top.add(id, score)
		}
		var err error
		if sd, ok := db.(IndexScorer); ok {
			err = sd.SearchScore(ctx, sc, q.Kind, st, probe, u, add)
		} else {
			err = db.SearchScan(ctx, sc, q.Kind, st, probe, func(id, vec []byte, straggler bool) { add(id, memory.CosineUnit(vec, u), straggler) })
		}
		if err != nil {
			return nil, err
		}
		if b != nil && (!exists && stragglers >= memory.IndexFrom || st != nil && stragglers >= assignAfter) {
			b.Want(sc)
		}
	}
	return memory.Best(top.all, q.Max()), nil
}

// topScores keeps the limit best scores (> 0) seen, copying an id only when it enters.
type topScores struct {
	limit int
	all   []memory.Scored
	worst int // index of the lowest kept score, when full
}

func (t *topScores) add(id []byte, score float64) {
	if score <= 0 {
		return
	}
	if len(t.all) < t.limit {
		t.all = append(t.all, memory.Scored{ID: string(id), Score: score})
		if len(t.all) == t.limit {
			t.findWorst()
		}
		return
	}
	if score <= t.all[t.worst].Score {
		return
	}
	t.all[t.worst] = memory.Scored{ID: string(id), Score: score}
	t.findWorst()
}

func (t *topScores) findWorst() {
	t.worst = 0
	for i, s := range t.all {
		if s.Score < t.all[t.worst].Score {
			t.worst = i
		}
	}
}

// IndexCache keeps the decoded centroids of the indexes a store read last, by scope,
// while their lists (Lo, Hi) are unchanged: a search reads four numbers, not the
// centroids, when the index has not been trained again.
type IndexCache struct {
	mu sync.Mutex
	m  map[IndexScope]*IndexState
}

// Get returns the kept index of sc if it is the training Lo..Hi, with the counts given.
func (c *IndexCache) Get(sc IndexScope, lo, hi int64, trained, vectors int) (*IndexState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[sc]
	if !ok || st.Lo != lo || st.Hi != hi {
		return nil, false
	}
	cp := *st
	cp.Trained, cp.Vectors = trained, vectors
	return &cp, true
}

// Put keeps st for sc (256 scopes at most: past that the cache starts again empty).
func (c *IndexCache) Put(sc IndexScope, st *IndexState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 256 {
		c.m = map[IndexScope]*IndexState{}
	}
	c.m[sc] = st
}
