package store

import (
	"context"
	"database/sql"
	"sync"
)

// wtx is a write's transaction on the writer's connection. It stands where a *sql.Tx
// would, because database/sql cannot give a transaction statements prepared once:
// Tx.StmtContext prepares a connection's statement again for every transaction, and
// an Exec with a query string prepares it again for every call. Parsing SQL was 7% of
// a run's CPU in the server's load test. The writer begins and ends its transactions
// itself (BEGIN IMMEDIATE, COMMIT, ROLLBACK, savepoints) on the one connection it
// holds, and every statement it runs, those included, is prepared on that connection
// once and kept (stmtCache).
type wtx struct {
	w *writer
}

// ExecContext runs query with args in the transaction.
func (tx *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := tx.w.stmts.get(ctx, tx.w.conn, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return tx.w.conn.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// QueryRowContext runs query with args in the transaction and returns its first row.
func (tx *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := tx.w.stmts.get(ctx, tx.w.conn, query)
	if err != nil || st == nil {
		// Run it directly: a failure to prepare is reported by Scan the same way.
		return tx.w.conn.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// QueryContext runs query with args in the transaction (rows to close before the next
// statement).
func (tx *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := tx.w.stmts.get(ctx, tx.w.conn, query)
	if err != nil || st == nil {
		return tx.w.conn.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// maxStmts bounds the statements kept on the write connection. Every write's SQL is a
// constant, but a few build a WHERE from their filters; past the bound a statement is
// prepared, run and closed as before.
const maxStmts = 128

// preparer is a *sql.Conn (the writer's statements) or a *sql.DB (reads: database/sql
// prepares a DB's statement once on each pooled connection it runs on).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// stmtCache is prepared statements by query text: the write connection's, which only
// the writer's leader uses, one at a time, and the reads', used by any goroutine.
type stmtCache struct {
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	closed bool // close ran: keep nothing more
}

// get returns query's statement, prepared on conn the first time; nil once maxStmts
// are kept (the caller runs the query on conn, which prepares and closes it). The lock
// is not held while preparing: a DB's prepare may wait for a pooled connection, and
// reads whose statements are kept must not wait behind it.
func (c *stmtCache) get(ctx context.Context, conn preparer, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, full := c.m[query], len(c.m) >= maxStmts
	c.mu.Unlock()
	if st != nil || full {
		return st, nil
	}
	st, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.m[query]; kept != nil || c.closed || len(c.m) >= maxStmts {
		// Prepared meanwhile by another caller, or the store closed, or full: this
		// one is not kept, and its caller runs the query on conn instead.
		st.Close()
		return kept, nil
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m, c.closed = nil, true
}

// exec runs one of the writer's own statements (BEGIN, COMMIT, savepoints).
func (w *writer) exec(ctx context.Context, query string) error {
	_, err := (&wtx{w}).ExecContext(ctx, query)
	return err
}

// query runs a read on the store's pool with its statement prepared once (reads).
func (s *SQLite) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.reads.get(ctx, s.db, query)
	if err != nil || st == nil {
		return s.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (s *SQLite) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.reads.get(ctx, s.db, query)
	if err != nil || st == nil {
		return s.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
