package store

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

func BenchmarkExpWords(b *testing.B) {
	path := "/tmp/rx/w100k.db"
	_, statErr := os.Stat(path)
	s, err := OpenSQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if statErr != nil {
		fillMemories(b, s, 100_000, 1, nil)
	}
	q := memory.Query{User: "u0", Agent: "helper", Text: "which w17 should I buy for w3 and w250 next w1999?", Kind: memory.KindFact, Limit: 5}
	scopes := visibleScopes(q)
	terms := memory.Terms(q.Text)
	match := "{scope} : (" + memory.FTS5Query(scopes) + ") AND {terms} : (" + memory.FTS5Query(terms) + ")"
	b.Run("current", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.searchWords(context.Background(), q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fts-rank", func(b *testing.B) {
		for b.Loop() {
			rows, err := s.query(context.Background(), `SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.0)' ORDER BY rank LIMIT 20`, match)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n != 20 {
				b.Fatal(n)
			}
		}
	})
	b.Run("fts-count", func(b *testing.B) {
		for b.Loop() {
			var n int
			if err := s.queryRow(context.Background(), `SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?`, match).Scan(&n); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "matches")
		}
	})
	for _, t := range terms {
		b.Run("df-"+t, func(b *testing.B) {
			for b.Loop() {
				var n int
				if err := s.queryRow(context.Background(), `SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?`, `{terms} : "`+t+`"`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "matches")
			}
		})
	}
}

func BenchmarkExpWords2(b *testing.B) {
	s, err := OpenSQLite("/tmp/rx/w100k.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := memory.Query{User: "u0", Agent: "helper", Text: "which w17 should I buy for w3 and w250 next w1999?", Kind: memory.KindFact, Limit: 5}
	b.Run("new", func(b *testing.B) {
		c0 := cpuNow()
		for b.Loop() {
			h, err := s.searchWords(context.Background(), q)
			if err != nil || len(h) != 5 {
				b.Fatal(err, len(h))
			}
		}
		b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
	})
}

func cpuNow() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkExpWords3(b *testing.B) {
	s, err := OpenSQLite("/tmp/rx/w100k.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := memory.Query{User: "u0", Agent: "helper", Text: "which w17 should I buy for w3 and w250 next w1999?", Kind: memory.KindFact, Limit: 5}
	scope := "{scope} : (" + memory.FTS5Query(visibleScopes(q)) + ")"
	full := scope + " AND {terms} : (" + memory.FTS5Query(memory.Terms(q.Text)) + ")"
	run := func(name, sql string, args ...any) {
		b.Run(name, func(b *testing.B) {
			c0 := cpuNow()
			for b.Loop() {
				rows, err := s.query(context.Background(), sql, args...)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				b.ReportMetric(float64(n), "rows")
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
	run("count-w3", `SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 400)`, scope+` AND {terms} : "w3"`)
	run("count-w1999", `SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 400)`, scope+` AND {terms} : "w1999"`)
	run("cand", `SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.0)' ORDER BY rank LIMIT 20`, scope+` AND {terms} : ("w250" OR "w1999")`)
	run("one", `SELECT rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts WHERE memories_fts MATCH ? AND rowid = ?`, full, 77)
}
