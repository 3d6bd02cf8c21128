package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/jackc/pgx/v5"
)

var _ audit.Store = (*Store)(nil)

// auditLock is the advisory lock appends take, so that two nodes never chain after the
// same record ("audit" in ASCII).
const auditLock = 0x6175646974

// AppendAudit chains r after the last record and stores it in one transaction under an
// advisory lock (audit.Store).
func (s *Store) AppendAudit(ctx context.Context, r audit.Record) (audit.Record, error) {
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, auditLock); err != nil {
			return err
		}
		var prev audit.Record
		err := tx.QueryRow(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&prev.Seq, &prev.Hash)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			audit.Chain(&r, nil)
		case err != nil:
			return err
		default:
			audit.Chain(&r, &prev)
		}
		return insertAudit(ctx, tx, r)
	})
	if err != nil {
		return audit.Record{}, fmt.Errorf("append audit record: %w", err)
	}
	return r, nil
}

func insertAudit(ctx context.Context, tx pgx.Tx, r audit.Record) error {
	detail, _ := json.Marshal(r.Detail)
	_, err := tx.Exec(ctx, `INSERT INTO audit (seq, time, action, actor, target, detail, prev, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		r.Seq, r.Time, r.Action, r.Actor, r.Target, detail, r.Prev, r.Hash)
	return err
}

// migrateAuditGenesis allows one genesis record only; with it, migrate begins an empty
// audit log with its genesis record (writeGenesis).
const migrateAuditGenesis = `
CREATE UNIQUE INDEX audit_one_genesis ON audit (action) WHERE action = 'audit.genesis';`

// writeGenesis begins an empty audit log with its genesis record (audit.Genesis). A log
// that holds records already (begun before genesis records) is left as it is: nothing
// can be put before its record 1 without breaking its chain; `audit verify` reports it.
func writeGenesis(ctx context.Context, tx pgx.Tx) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM audit`).Scan(&n); err != nil || n > 0 {
		return err
	}
	return insertAudit(ctx, tx, audit.Genesis(time.Now()))
}

// Audit lists records after seq after, oldest first (audit.Store).
func (s *Store) Audit(ctx context.Context, after int64, limit int) ([]audit.Record, error) {
	q := `SELECT seq, time, action, actor, target, detail, prev, hash FROM audit WHERE seq > $1 ORDER BY seq`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.db.Query(ctx, q, after)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		var r audit.Record
		var detail []byte
		if err := rows.Scan(&r.Seq, &r.Time, &r.Action, &r.Actor, &r.Target, &detail, &r.Prev, &r.Hash); err != nil {
			return nil, fmt.Errorf("read audit log: %w", err)
		}
		r.Time = r.Time.UTC()
		if string(detail) != "null" {
			if err := json.Unmarshal(detail, &r.Detail); err != nil {
				return nil, fmt.Errorf("audit record %d: detail: %w", r.Seq, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
