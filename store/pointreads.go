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
// a few rows each. A connection that starts a read after another connection committed
// (the writer, once per step) drops what it cached of the file and reads the pages it
// needs again, so such a read runs on the writer's own connection when no write holds
// or awaits it: that connection made the last commit, its cache is the file's, and its
// statements are prepared. The read holds the writer's lead until its rows are closed
// (a write arriving meanwhile waits for one read of a few rows), so a caller must close
// them before it writes. When the writer is busy the read runs on connections of its
// own that do not map the file: with the file mapped, dropping the cache is an munmap of
// the whole map and a new map at the next read (5% of a one-step run's CPU on SQLite).
//
// Reads run without their context's cancellation: a context that can be cancelled costs
// every statement two goroutines (database/sql's and the driver's watchers) for rows
// that take microseconds.
type pointReads struct {
	db    *sql.DB
	w     *writer
	stmts stmtCache
	reads atomic.Int64 // statements run, for tests
	warm  atomic.Int64 // of them, those run on the writer's connection
}

func openPointReads(dsn string, w *writer) (*pointReads, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	return &pointReads{db: db, w: w}, nil
}

func (p *pointReads) close() {
	p.stmts.close()
	p.db.Close()
}

// pointRows are a read's rows; Close gives back the writer's connection when the read
// ran on it.
type pointRows struct {
	*sql.Rows
	release func()
}

func (r *pointRows) Close() error {
	err := r.Rows.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}

// query runs a read with its statement prepared once.
func (p *pointReads) query(ctx context.Context, query string, args ...any) (*pointRows, error) {
	p.reads.Add(1)
	ctx = context.WithoutCancel(ctx)
	if p.w != nil && p.w.tryHold() {
		p.warm.Add(1)
		rows, err := (&wtx{p.w}).QueryContext(ctx, query, args...)
		if err != nil {
			p.w.handOff()
			return nil, err
		}
		return &pointRows{Rows: rows, release: p.w.handOff}, nil
	}
	st, err := p.stmts.get(ctx, p.db, query)
	var rows *sql.Rows
	if err != nil || st == nil {
		rows, err = p.db.QueryContext(ctx, query, args...)
	} else {
		rows, err = st.QueryContext(ctx, args...)
	}
	if err != nil {
		return nil, err
	}
	return &pointRows{Rows: rows}, nil
}
