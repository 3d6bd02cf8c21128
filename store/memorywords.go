package store

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/memory"
)

// searchWords ranks the entries q may see by FTS5's bm25 over memory.Terms of q.Text. The
// match is limited to the scopes q may see inside the index (so only their entries are
// ranked), and the visibility rule is applied again in the WHERE clause, so a LIMIT never
// fills up with entries the user may not see. When some of the words are common, the
// memories holding a rare one (memory.RareTerms) are ranked in Go by all the words
// (memory.RankBM25): the cost follows the rare words' matches, not the common ones'.
// When every word is rare, or the rare ones find too few, FTS5 ranks every match. A
// search that may see fewer than memory.ScopeWhole memories reads them all and ranks
// them in Go (rankScope) instead: the engine's matching of a common word walks its list
// across every user's memories, however few the scope holds.
func (s *SQLite) searchWords(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	terms := memory.Terms(q.Text)
	scopes := visibleScopes(q)
	if len(terms) == 0 || len(scopes) == 0 {
		return nil, nil
	}
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if s.keys != nil {
		// Until Reseal, memories written before the keys are indexed by their words.
		blind := s.keys.IndexQuery(terms)
		if s.mixed {
			blind = append(blind, terms...)
		}
		terms = blind
	}
	scope := "{scope} : (" + memory.FTS5Query(scopes) + ")"
	if n, err := s.countMatch(ctx, scope, memory.ScopeWhole); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	} else if n < memory.ScopeWhole { // reads the scope tokens' lists alone
		return s.rankScope(ctx, q, scope, terms)
	}
	rare, df, err := memory.RareTerms(ctx, terms, func(ctx context.Context, t string, limit int) (int, error) {
		return s.countMatch(ctx, scope+" AND {terms} : "+memory.FTS5Query([]string{t}), limit)
	})
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if rare != nil && len(rare) < len(terms) { // every word rare: the engine ranks few matches
		hits, err := s.rankRare(ctx, q, scope, terms, rare, df)
		if err != nil || len(hits) >= q.Max() {
			return hits, err
		}
	}
	return s.rankWords(ctx, q, scope+" AND {terms} : ("+memory.FTS5Query(terms)+")")
}

// countMatch counts the index's matches of match, at most limit: it reads no more than
// limit entries of the match's lists.
func (s *SQLite) countMatch(ctx context.Context, match string, limit int) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)`, match, limit).Scan(&n)
	return n, err
}

// rankScope ranks, in Go (memory.RankWhole), every entry q may see, fewer than
// memory.ScopeWhole: a search of a user with few memories among many users' reads that
// user's memories and the first entries of its words' lists, whatever the words match in
// other users' memories.
func (s *SQLite) rankScope(ctx context.Context, q memory.Query, scope string, terms []string) ([]memory.Hit, error) {
	docs, err := s.readDocs(ctx, q, scope)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if read, ok := ctx.Value(scopeReadKey{}).(*int); ok { // tests: what the search read
		*read += len(docs)
	}
	var top int64
	if err := s.queryRow(ctx, `SELECT coalesce(max(rowid), 0) FROM memories`).Scan(&top); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	n := s.ftsRows(ctx)
	best, err := memory.RankWhole(ctx, docs, terms, n, func(ctx context.Context, t string) (int, error) {
		// The newest memories holding t, at most memory.RareBelow: FTS5 reads its list
		// from the end, no further.
		var read int
		var lowest int64
		err := s.queryRow(ctx, `SELECT count(*), coalesce(min(rowid), 0) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?)`,
			"{terms} : "+memory.FTS5Query([]string{t}), memory.RareBelow).Scan(&read, &lowest)
		return memory.EstimateDF(read, lowest, top, n), err
	})
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	return s.readHits(ctx, best[:min(len(best), q.Max())])
}

// scopeReadKey is a test's key: a context holding an *int under it has the memories
// rankScope reads added to it.
type scopeReadKey struct{}

// readDocs reads the id and index words of each entry q may see that match holds.
func (s *SQLite) readDocs(ctx context.Context, q memory.Query, match string) ([]memory.Doc, error) {
	rows, err := s.query(ctx, `SELECT m.id, m.terms FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
WHERE memories_fts MATCH ? AND `+visibleSQL,
		match, q.User, q.User, q.Agent, q.Agent, q.Agent, string(q.Kind), string(q.Kind))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var docs []memory.Doc
	for rows.Next() {
		var d memory.Doc
		var words string
		if err := rows.Scan(&d.ID, &words); err != nil {
			return nil, err
		}
		d.Words = memory.Words(words)
		docs = append(docs, d)
	}
	return docs, rows.Err()
}

// rankRare ranks, in Go (memory.RankBM25), the entries q may see that hold a rare word:
// at most memory.RareBudget and a few of them, whatever the common words match.
func (s *SQLite) rankRare(ctx context.Context, q memory.Query, scope string, terms, rare []string, df []int) ([]memory.Hit, error) {
	docs, err := s.readDocs(ctx, q, scope+" AND {terms} : ("+memory.FTS5Query(rare)+")")
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	best := memory.RankBM25(docs, terms, rare, df, s.ftsRows(ctx))
	return s.readHits(ctx, best[:min(len(best), q.Max())])
}

// ftsRows is the number of memories the word index holds (FTS5's averages record, the
// one bm25 reads), 0 when it cannot be read.
func (s *SQLite) ftsRows(ctx context.Context) int {
	var b []byte
	if err := s.queryRow(ctx, `SELECT block FROM memories_fts_data WHERE id = 1`).Scan(&b); err != nil {
		return 0
	}
	var n uint64
	for i := 0; i < len(b) && i < 9; i++ { // SQLite's varint: 7 bits a byte, high bit "more"
		if i == 8 {
			n = n<<8 | uint64(b[i])
			break
		}
		n = n<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			break
		}
	}
	return int(min(n, 1<<40))
}

// rankWords ranks by FTS5's bm25 all the entries q may see that match: what a search
// whose words are all common costs.
func (s *SQLite) rankWords(ctx context.Context, q memory.Query, match string) ([]memory.Hit, error) {
	query := `SELECT ` + memoryColumns + `, -bm25(memories_fts, 1.0, 0.0)
FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
WHERE memories_fts MATCH ?`
	args := []any{match}
	query += `
  AND ` + visibleSQL + `
ORDER BY bm25(memories_fts, 1.0, 0.0), m.updated DESC LIMIT ?`
	args = append(args, q.User, q.User, q.Agent, q.Agent, q.Agent, string(q.Kind), string(q.Kind), q.Max())
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	defer rows.Close()
	var out []memory.Hit
	for rows.Next() {
		var h memory.Hit
		if err := s.scanMemory(rows, &h.Entry, &h.Score); err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
