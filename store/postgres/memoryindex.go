package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/jackc/pgx/v5"
)

// The PostgreSQL store's part of the vector index (store/vectorindex.go): its SQL.

var _ store.IndexDB = pgIndex{}

type pgIndex struct{ s *Store }

// indexLock is the advisory lock a memory deletion and an index activation hold, so an
// activation never lands after the erasure of its scope's memories ("memindex").
const indexLock = 0x6d656d696e646578

// searchVector ranks the entries q may see by similarity (store.SearchVectors), then
// reads the best whole. Sealed, there is no index (as in the SQLite store).
func (s *Store) searchVector(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	b := s.index
	if s.keys != nil {
		b = nil
	}
	best, err := store.SearchVectors(ctx, pgIndex{s}, b, q)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	return s.readHits(ctx, best)
}

// readHits reads the entries of best whole, in its order, with its scores.
func (s *Store) readHits(ctx context.Context, best []memory.Scored) ([]memory.Hit, error) {
	out := make([]memory.Hit, 0, len(best))
	for _, b := range best {
		r, err := s.db.Query(ctx, `SELECT `+readColumns+` FROM memories WHERE id = $1`, b.ID)
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

func newIndexBuilder(s *Store) *store.IndexBuilder {
	return store.NewIndexBuilder(pgIndex{s}, slog.Default)
}

func (x pgIndex) IndexState(ctx context.Context, sc store.IndexScope) (*store.IndexState, bool, error) {
	var st store.IndexState
	var dims int
	err := x.s.db.QueryRow(ctx, `SELECT lo, hi, trained, vectors, dims FROM memory_index WHERE owner = $1 AND agent = $2`, sc.Owner, sc.Agent).
		Scan(&st.Lo, &st.Hi, &st.Trained, &st.Vectors, &dims)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if c, ok := x.s.icache.Get(sc, st.Lo, st.Hi, st.Trained, st.Vectors); ok {
		return c, true, nil
	}
	var b []byte
	err = x.s.db.QueryRow(ctx, `SELECT centroids FROM memory_index WHERE owner = $1 AND agent = $2 AND lo = $3`, sc.Owner, sc.Agent, st.Lo).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) { // trained again between the two reads: exact this time
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if st.IVF, err = memory.DecodeIVF(b, dims); err != nil {
		return nil, false, err
	}
	x.s.icache.Put(sc, &st)
	return &st, true, nil
}

func (x pgIndex) ScanVectors(ctx context.Context, sc store.IndexScope, st *store.IndexState, fn func(id string, b []byte) error) error {
	query, args := `SELECT id, vector, true FROM memories WHERE owner = $1 AND agent = $2 AND vector IS NOT NULL`, []any{sc.Owner, sc.Agent}
	if st != nil {
		query += ` AND (list IS NULL OR list >= 0 AND list < $3 OR list > $4)`
		args = append(args, st.Lo, st.Hi)
	}
	return x.scan(ctx, query, args, func(id, b []byte, _ bool) error { return fn(string(id), b) })
}

func (x pgIndex) SearchScan(ctx context.Context, sc store.IndexScope, kind memory.Kind, st *store.IndexState, probe []int64, fn func(id, b []byte, straggler bool)) error {
	const where = `owner = $1 AND agent = $2 AND vector IS NOT NULL AND ($3 = '' OR kind = $3)`
	query, args := `SELECT id, vector, true FROM memories WHERE `+where, []any{sc.Owner, sc.Agent, string(kind)}
	if st != nil {
		// Each arm a range of memories_by_list: the probed lists, then the stragglers.
		query = `SELECT id, vector, false FROM memories WHERE ` + where + ` AND list = ANY($4)
UNION ALL SELECT id, vector, true FROM memories WHERE ` + where + ` AND list IS NULL
UNION ALL SELECT id, vector, true FROM memories WHERE ` + where + ` AND list >= 0 AND list < $5
UNION ALL SELECT id, vector, true FROM memories WHERE ` + where + ` AND list > $6`
		args = append(args, probe, st.Lo, st.Hi)
	}
	return x.scan(ctx, query, args, func(id, b []byte, straggler bool) error {
		fn(id, b, straggler)
		return nil
	})
}

// scan runs query (id, vector, straggler) and calls fn with each vector as received (no
// copy), opened when the store is sealed.
func (x pgIndex) scan(ctx context.Context, query string, args []any, fn func(id, b []byte, straggler bool) error) error {
	rows, err := x.s.db.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	binary := rows.FieldDescriptions()[1].Format == pgx.BinaryFormatCode
	for rows.Next() {
		var id, b []byte
		var straggler bool
		if raw := rows.RawValues(); binary && len(raw) == 3 && len(raw[2]) == 1 {
			// the vector as received: bytea's binary format is its bytes
			id, b, straggler = raw[0], raw[1], raw[2][0] == 1
		} else if err := rows.Scan(&id, &b, &straggler); err != nil {
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

func (x pgIndex) SetLists(ctx context.Context, sc store.IndexScope, ids []string, lists []int64) error {
	const batch = 1000
	for i := 0; i < len(ids); i += batch {
		j := min(len(ids), i+batch)
		_, err := x.s.db.Exec(ctx, `UPDATE memories m SET list = u.list FROM unnest($1::text[], $2::bigint[]) AS u(id, list)
WHERE m.id = u.id AND m.owner = $3 AND m.agent = $4`, ids[i:j], lists[i:j], sc.Owner, sc.Agent)
		if err != nil {
			return err
		}
	}
	return nil
}

func (x pgIndex) Activate(ctx context.Context, sc store.IndexScope, st *store.IndexState) error {
	return x.s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(indexLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_index (owner, agent, lo, hi, trained, vectors, dims, centroids)
SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM memories WHERE owner = $1 AND agent = $2)
ON CONFLICT (owner, agent) DO UPDATE SET lo = excluded.lo, hi = excluded.hi, trained = excluded.trained,
	vectors = excluded.vectors, dims = excluded.dims, centroids = excluded.centroids`,
			sc.Owner, sc.Agent, st.Lo, st.Hi, st.Trained, st.Vectors, st.IVF.Dims, memory.EncodeIVF(st.IVF)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE memories SET list = $3 WHERE owner = $1 AND agent = $2 AND vector IS NULL AND list IS DISTINCT FROM $3`,
			sc.Owner, sc.Agent, int64(store.NoList))
		return err
	})
}

func (x pgIndex) Assigned(ctx context.Context, sc store.IndexScope, st *store.IndexState, n int) error {
	_, err := x.s.db.Exec(ctx, `UPDATE memory_index SET vectors = vectors + $1 WHERE owner = $2 AND agent = $3 AND lo = $4`, n, sc.Owner, sc.Agent, st.Lo)
	return err
}
