package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store/seal"
)

// The SQLite store's part of the vector index (vectorindex.go): its SQL.

var _ IndexDB = sqliteIndex{}

type sqliteIndex struct{ s *SQLite }

// newIndexBuilder is the store's builder, reporting to the store's logger (SetLogger).
func newIndexBuilder(s *SQLite) *IndexBuilder {
	return NewIndexBuilder(sqliteIndex{s}, func() *slog.Logger {
		s.watch.mu.Lock()
		defer s.watch.mu.Unlock()
		return s.watch.log
	})
}

// searchVector ranks the entries q may see by similarity to q.Vector (SearchVectors),
// then reads the best whole. A sealed store keeps no index (its vectors are sealed, and
// lists would tell which memories are alike): it reads and opens every vector.
func (s *SQLite) searchVector(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	b := s.index
	if s.keys != nil {
		b = nil
	}
	best, err := SearchVectors(ctx, sqliteIndex{s}, b, q)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	return s.readHits(ctx, best)
}

// readHits reads the entries of best whole, in its order, with its scores.
func (s *SQLite) readHits(ctx context.Context, best []memory.Scored) ([]memory.Hit, error) {
	out := make([]memory.Hit, 0, len(best))
	for _, b := range best {
		r, err := s.query(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE m.id = ?`, b.ID)
		if err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		for r.Next() {
			h := memory.Hit{Score: b.Score}
			if err := s.scanMemory(r, &h.Entry); err != nil {
				r.Close()
				return nil, fmt.Errorf("search memory: %w", err)
			}
			out = append(out, h)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
	}
	return out, nil
}

func (x sqliteIndex) IndexState(ctx context.Context, sc IndexScope) (*IndexState, bool, error) {
	var st IndexState
	var dims int
	err := x.s.queryRow(ctx, `SELECT lo, hi, trained, vectors, dims FROM memory_index WHERE owner = ? AND agent = ?`, sc.Owner, sc.Agent).
		Scan(&st.Lo, &st.Hi, &st.Trained, &st.Vectors, &dims)
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if c, ok := x.s.icache.Get(sc, st.Lo, st.Hi, st.Trained, st.Vectors); ok {
		return c, true, nil
	}
	var b []byte
	if err := x.s.queryRow(ctx, `SELECT centroids FROM memory_index WHERE owner = ? AND agent = ? AND lo = ?`, sc.Owner, sc.Agent, st.Lo).Scan(&b); err != nil {
		if err == sql.ErrNoRows { // trained again between the two reads: exact this time
			return nil, false, nil
		}
		return nil, false, err
	}
	if st.IVF, err = memory.DecodeIVF(b, dims); err != nil {
		return nil, false, err
	}
	x.s.icache.Put(sc, &st)
	return &st, true, nil
}

// stragglerSQL is "not in a list of the index lo..hi", for the arguments lo, hi.
const stragglerSQL = `(list IS NULL OR list >= 0 AND list < ? OR list > ?)`

func (x sqliteIndex) ScanVectors(ctx context.Context, sc IndexScope, st *IndexState, fn func(id string, b []byte) error) error {
	query, args := `SELECT id, vector FROM memories WHERE owner = ? AND agent = ? AND vector IS NOT NULL`, []any{sc.Owner, sc.Agent}
	if st != nil {
		query += ` AND ` + stragglerSQL
		args = append(args, st.Lo, st.Hi)
	}
	return x.scan(ctx, query, args, func(id, b []byte, _ bool) error { return fn(string(id), b) })
}

func (x sqliteIndex) SearchScan(ctx context.Context, sc IndexScope, kind memory.Kind, st *IndexState, probe []int64, fn func(id, b []byte, straggler bool)) error {
	query, args := searchSQL("vector", nil, sc, kind, st, probe)
	return x.scan(ctx, query, args, func(id, b []byte, straggler bool) error {
		fn(id, b, straggler)
		return nil
	})
}

// SearchScore scores inside SQLite (cosineSQL), so no vector is copied out of the
// database: a search reads ~2,000 of them at 100,000 memories, and copying them was most
// of its allocations and a quarter of its CPU (garbage collection). A sealed store's
// vectors are opened in Go first, so it scores what SearchScan reads.
func (x sqliteIndex) SearchScore(ctx context.Context, sc IndexScope, kind memory.Kind, st *IndexState, probe []int64, u []float32, fn func(id []byte, score float64, straggler bool)) error {
	if x.s.keys != nil {
		return x.SearchScan(ctx, sc, kind, st, probe, func(id, b []byte, straggler bool) { fn(id, memory.CosineUnit(b, u), straggler) })
	}
	query, args := searchSQL(cosineSQL+"(vector, ?)", memory.EncodeVector(u), sc, kind, st, probe)
	rows, err := x.s.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id sql.RawBytes
		var score float64
		var straggler bool
		if err := rows.Scan(&id, &score, &straggler); err != nil {
			return err
		}
		fn(id, score, straggler)
	}
	return rows.Err()
}

// searchSQL is SearchScan's query, selecting id, col and the straggler flag; arg, when
// not nil, is col's argument (in each arm of the union).
func searchSQL(col string, arg any, sc IndexScope, kind memory.Kind, st *IndexState, probe []int64) (string, []any) {
	const where = `owner = ? AND agent = ? AND vector IS NOT NULL AND (? = '' OR kind = ?)`
	arm := func(args ...any) []any {
		if arg != nil {
			return append([]any{arg}, args...)
		}
		return args
	}
	w := []any{sc.Owner, sc.Agent, string(kind), string(kind)}
	if st == nil {
		return `SELECT id, ` + col + `, 1 FROM memories WHERE ` + where, arm(w...)
	}
	lists, _ := json.Marshal(probe)
	// Each arm a range of memories_by_list: the probed lists, then the stragglers.
	query := `SELECT id, ` + col + `, 0 FROM memories WHERE ` + where + ` AND list IN (SELECT value FROM json_each(?))
UNION ALL SELECT id, ` + col + `, 1 FROM memories WHERE ` + where + ` AND list IS NULL
UNION ALL SELECT id, ` + col + `, 1 FROM memories WHERE ` + where + ` AND list >= 0 AND list < ?
UNION ALL SELECT id, ` + col + `, 1 FROM memories WHERE ` + where + ` AND list > ?`
	var args []any
	args = append(args, arm(slices.Concat(w, []any{string(lists)})...)...)
	args = append(args, arm(w...)...)
	args = append(args, arm(slices.Concat(w, []any{st.Lo})...)...)
	args = append(args, arm(slices.Concat(w, []any{st.Hi})...)...)
	return query, args
}

// scan runs query (id, vector[, straggler]) and calls fn with each vector read in place,
// opened when the store is sealed.
func (x sqliteIndex) scan(ctx context.Context, query string, args []any, fn func(id, b []byte, straggler bool) error) error {
	rows, err := x.s.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		var id, b sql.RawBytes // read in place: the vectors are most of what a search reads
		var straggler bool
		dest := []any{&id, &b, &straggler}[:len(cols)]
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if x.s.keys != nil {
			if b, err = x.s.keys.Open(b, seal.MemoryAAD(string(id), "vector")); err != nil {
				return fmt.Errorf("memory %s: %w", id, err)
			}
		}
		if err := fn(id, b, straggler); err != nil {
			return err
		}
	}
	return rows.Err()
}

// setListsBatch is how many lists one write transaction stores: other writes go between.
const setListsBatch = 500

func (x sqliteIndex) SetLists(ctx context.Context, sc IndexScope, ids []string, lists []int64) error {
	for i := 0; i < len(ids); i += setListsBatch {
		j := min(len(ids), i+setListsBatch)
		err := x.s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
			for k := i; k < j; k++ {
				if _, err := tx.ExecContext(ctx, `UPDATE memories SET list = ? WHERE id = ? AND owner = ? AND agent = ?`, lists[k], ids[k], sc.Owner, sc.Agent); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (x sqliteIndex) Activate(ctx context.Context, sc IndexScope, st *IndexState) error {
	return x.s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_index (owner, agent, lo, hi, trained, vectors, dims, centroids)
SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE owner = ? AND agent = ?)
ON CONFLICT (owner, agent) DO UPDATE SET lo = excluded.lo, hi = excluded.hi, trained = excluded.trained,
	vectors = excluded.vectors, dims = excluded.dims, centroids = excluded.centroids`,
			sc.Owner, sc.Agent, st.Lo, st.Hi, st.Trained, st.Vectors, st.IVF.Dims, memory.EncodeIVF(st.IVF), sc.Owner, sc.Agent); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE memories SET list = ? WHERE owner = ? AND agent = ? AND vector IS NULL AND list IS NOT ?`, NoList, sc.Owner, sc.Agent, NoList)
		return err
	})
}

func (x sqliteIndex) Assigned(ctx context.Context, sc IndexScope, st *IndexState, n int) error {
	return x.s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE memory_index SET vectors = vectors + ? WHERE owner = ? AND agent = ? AND lo = ?`, n, sc.Owner, sc.Agent, st.Lo)
		return err
	})
}

// dropOrphanIndexes deletes the index of every scope left without memories: run in the
// transaction of every memory deletion, so an erased user's centroids (averages of their
// vectors) go with their memories.
const dropOrphanIndexes = `DELETE FROM memory_index WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.owner = memory_index.owner AND m.agent = memory_index.agent)`
