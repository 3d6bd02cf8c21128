package postgres

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/memory"
)

// visibleWhere is memory.Query.Visible and its kind filter, for the arguments $2 user,
// $3 agent, $4 kind.
const visibleWhere = `((owner = $2 AND $2 <> '' AND (agent = '' OR agent = $3)) OR (owner = '' AND agent = $3 AND $3 <> ''))
  AND ($4 = '' OR kind = $4)`

// searchWords ranks the entries q may see by their words, as the SQLite store does: the
// rare words' matches first (memory.RareTerms), ranked in Go by all the words
// (memory.RankBM25), so the GIN index's matches of a common word are not all ranked;
// by ts_rank over every match when the rare words find too few.
func (s *Store) searchWords(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	terms := memory.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	if s.keys != nil {
		// Until Reseal, memories written before the keys are indexed by their words.
		blind := s.keys.IndexQuery(terms)
		if s.mixed {
			blind = append(blind, terms...)
		}
		terms = blind
	}
	rare, df, err := memory.RareTerms(ctx, terms, func(ctx context.Context, t string, limit int) (int, error) {
		var n int
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories WHERE tsv @@ to_tsquery('simple', $1) AND `+visibleWhere+` LIMIT $5) c`,
			memory.TSQuery([]string{t}), q.User, q.Agent, string(q.Kind), limit).Scan(&n)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if rare != nil && len(rare) < len(terms) { // every word rare: the engine ranks few matches
		hits, err := s.rankRare(ctx, q, terms, rare, df)
		if err != nil || len(hits) >= q.Max() {
			return hits, err
		}
	}
	return s.rankWords(ctx, q, terms)
}

// rankRare ranks in Go the entries q may see that hold a rare word.
func (s *Store) rankRare(ctx context.Context, q memory.Query, terms, rare []string, df []int) ([]memory.Hit, error) {
	rows, err := s.db.Query(ctx, `SELECT id, terms FROM memories WHERE tsv @@ to_tsquery('simple', $1) AND `+visibleWhere,
		memory.TSQuery(rare), q.User, q.Agent, string(q.Kind))
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	var docs []memory.Doc
	for rows.Next() {
		var d memory.Doc
		var words string
		if err := rows.Scan(&d.ID, &words); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search memory: %w", err)
		}
		d.Words = memory.Words(words)
		docs = append(docs, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	// The table's size as the planner last counted it: an estimate is what BM25's weight
	// of a word needs.
	var n float64
	if err := s.db.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass`).Scan(&n); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	best := memory.RankBM25(docs, terms, rare, df, int(max(n, float64(len(docs)))))
	return s.readHits(ctx, best[:min(len(best), q.Max())])
}

// rankWords ranks by ts_rank every match the entries q may see have.
func (s *Store) rankWords(ctx context.Context, q memory.Query, terms []string) ([]memory.Hit, error) {
	rows, err := s.db.Query(ctx, `SELECT `+readColumns+`, ts_rank(tsv, query) AS score
FROM memories, to_tsquery('simple', $1) query
WHERE tsv @@ query
  AND `+visibleWhere+`
ORDER BY score DESC, updated DESC LIMIT $5`, memory.TSQuery(terms), q.User, q.Agent, string(q.Kind), q.Max())
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	defer rows.Close()
	var out []memory.Hit
	for rows.Next() {
		var h memory.Hit
		var score float32
		if err := s.scanMemory(rows, &h.Entry, &score); err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		h.Score = float64(score)
		out = append(out, h)
	}
	return out, rows.Err()
}
