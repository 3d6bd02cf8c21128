package store

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// mmapPragma is the store's memory-mapped reads (up to 1 GiB of the file): a vector
// search reads thousands of rows scattered over the file (vectorindex.go).
const mmapPragma = "&_pragma=mmap_size(1073741824)"

// pointReads are the reads a run's start makes (its session's head, its claim state):
// a few rows each, on connections of their own that do not map the file. A connection
// that starts a read after another connection committed (the writer, once per step)
// drops what it cached of the file, and with the file mapped that is an munmap of the
// whole map and a new map at the next read: 5% of a one-step run's CPU on SQLite, more
// than the rows it read. Unmapped, it reads the few pages it needs with pread.
type pointReads struct {
	db    *sql.DB
	stmts stmtCache
	reads atomic.Int64 // statements run, for tests
}

func openPointReads(dsn string) (*pointReads, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	return &pointReads{db: db}, nil
}

func (p *pointReads) close() {
	p.stmts.close()
	p.db.Close()
}

// query runs a read with its statement prepared once.
func (p *pointReads) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.reads.Add(1)
	st, err := p.stmts.get(ctx, p.db, query)
	if err != nil || st == nil {
		return p.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (p *pointReads) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	p.reads.Add(1)
	st, err := p.stmts.get(ctx, p.db, query)
	if err != nil || st == nil {
		return p.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
