package store

import (
	"context"
	"database/sql"

	"github.com/agenthost/agenthost/access"
)

// migrateV11UserIDs gives every user an immutable id (access.NewUserID) and makes what
// referred to a user by name refer to the id: session owners, shares (grantee and
// granter) and memories (their owner, and so their index scope token). A name that is
// no present user's (a CLI run's --user label, a removed user's) stays as it is: it
// names no account, so no account inherits it. The audit log keeps the names it holds:
// its records are chained by hash and never rewritten (SECURITY.md).
func migrateV11UserIDs(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE users ADD COLUMN id TEXT NOT NULL DEFAULT ''`); err != nil {
		return err
	}
	ids, err := mintUserIDs(ctx, tx)
	if err != nil {
		return err
	}
	for name, id := range ids {
		for _, q := range []string{
			`UPDATE session_owners SET owner = ? WHERE owner = ?`,
			`UPDATE shares SET user = ? WHERE user = ?`,
			`UPDATE shares SET by = ? WHERE by = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id, name); err != nil {
				return err
			}
		}
		if err := rekeyMemories(ctx, tx, name, id); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `CREATE UNIQUE INDEX users_by_id ON users (id)`)
	return err
}

// mintUserIDs sets a new id on every user and returns them by name.
func mintUserIDs(ctx context.Context, tx *sql.Tx) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM users`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, n := range names {
		id, err := access.NewUserID()
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET id = ? WHERE name = ?`, id, n); err != nil {
			return nil, err
		}
		ids[n] = id
	}
	return ids, nil
}

// rekeyMemories moves a user's memories from their name to their id, with the scope
// token the index matches them by (the triggers re-index the changed rows).
func rekeyMemories(ctx context.Context, tx *sql.Tx, name, id string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT agent FROM memories WHERE owner = ?`, name)
	if err != nil {
		return err
	}
	var agents []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			rows.Close()
			return err
		}
		agents = append(agents, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, a := range agents {
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET owner = ?, scope = ? WHERE owner = ? AND agent = ?`, id, scopeToken(id, a), name, a); err != nil {
			return err
		}
	}
	return nil
}
