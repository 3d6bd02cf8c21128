package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// db is the one door every statement of the package goes through: the pool, and the
// transactions, rows and row it hands out, each of which marks an error saying the
// database is unreachable (unavailable) before returning it. No call site marks by hand,
// so none can forget to; the rule's test (door_test.go) fails when a file of the
// package reaches the raw pool, begins a transaction or takes a connection around this
// file, or calls a method the door does not mark.
type db struct{ pool *pgxpool.Pool }

// connect opens the pool to url; where names the server, never the password.
func connect(ctx context.Context, url string) (d *db, where string, err error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, "", fmt.Errorf("postgres store: bad url: %w", err)
	}
	where = fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, where, fmt.Errorf("postgres store %s: %w", where, unavailable(err))
	}
	return &db{pool}, where, nil
}

func (d *db) Close() { d.pool.Close() }

func (d *db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.pool.Exec(ctx, sql, args...)
	return tag, unavailable(err)
}

func (d *db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.pool.Query(ctx, sql, args...)
	return markedRows{rows}, unavailable(err)
}

func (d *db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return markedRow{d.pool.QueryRow(ctx, sql, args...)}
}

// Begin starts a transaction whose statements are marked as the pool's are.
func (d *db) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return markedTx{tx}, nil
}

// BeginFunc runs fn in a transaction (pgx.BeginFunc): committed when fn returns nil,
// rolled back otherwise.
func (d *db) BeginFunc(ctx context.Context, fn func(pgx.Tx) error) error {
	return unavailable(pgx.BeginFunc(ctx, d, fn))
}

// listen holds one pooled connection in LISTEN on channel, calls listening once it is,
// and notified with each notification's payload, until the connection or ctx fails.
func (d *db) listen(ctx context.Context, channel string, listening func(), notified func(payload string)) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return unavailable(err)
	}
	listening()
	defer conn.Exec(context.Background(), "UNLISTEN "+channel) //nolint:errcheck // back to the pool clean
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return unavailable(err)
		}
		notified(n.Payload)
	}
}

// markedTx is a transaction of the door. The methods it does not mark (SendBatch,
// Prepare, LargeObjects, Conn) are not called by the package (door_test.go).
type markedTx struct{ pgx.Tx }

func (t markedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return markedTx{tx}, nil
}

func (t markedTx) Commit(ctx context.Context) error   { return unavailable(t.Tx.Commit(ctx)) }
func (t markedTx) Rollback(ctx context.Context) error { return unavailable(t.Tx.Rollback(ctx)) }

func (t markedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, unavailable(err)
}

func (t markedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.Tx.Query(ctx, sql, args...)
	return markedRows{rows}, unavailable(err)
}

func (t markedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return markedRow{t.Tx.QueryRow(ctx, sql, args...)}
}

func (t markedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	n, err := t.Tx.CopyFrom(ctx, table, columns, src)
	return n, unavailable(err)
}

// markedRows are rows of the door: a cut met while reading them (Scan, Values, or only
// at their end, Err) is marked.
type markedRows struct{ pgx.Rows }

func (r markedRows) Err() error             { return unavailable(r.Rows.Err()) }
func (r markedRows) Scan(dest ...any) error { return unavailable(r.Rows.Scan(dest...)) }
func (r markedRows) Values() ([]any, error) {
	v, err := r.Rows.Values()
	return v, unavailable(err)
}

// markedRow is QueryRow's row: its Scan, where the query's error comes out, is marked.
type markedRow struct{ pgx.Row }

func (r markedRow) Scan(dest ...any) error { return unavailable(r.Row.Scan(dest...)) }
