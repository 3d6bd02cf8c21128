package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.AttachmentStore = (*Store)(nil)

// PutAttachment implements loop.AttachmentStore: under the session's lock, the session's
// total is read and the row inserted in one transaction, so two writers cannot both pass
// the limit. The bytes are sealed; size is their plain length.
func (s *Store) PutAttachment(ctx context.Context, session string, a loop.Attachment, sessionLimit int64) error {
	data := s.keys.Seal(a.Data, seal.AttachmentAAD(session, a.SHA256))
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, session); err != nil {
			return err
		}
		var held, total int64
		err := tx.QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE sha256 = $2), COALESCE(SUM(size), 0) FROM attachments WHERE session = $1`,
			session, a.SHA256).Scan(&held, &total)
		if err != nil || held > 0 {
			return err
		}
		if total += int64(len(a.Data)); total > sessionLimit {
			return fmt.Errorf("%w: the session's attachments would take %d bytes, over its %d-byte limit", loop.ErrAttachmentTooLarge, total, sessionLimit)
		}
		_, err = tx.Exec(ctx, `INSERT INTO attachments (session, sha256, mime, size, data) VALUES ($1, $2, $3, $4, $5)`,
			session, a.SHA256, a.MimeType, len(a.Data), data)
		return err
	})
	if err != nil {
		return fmt.Errorf("store attachment %.12s: %w", a.SHA256, err)
	}
	return nil
}

// Attachment implements loop.AttachmentStore.
func (s *Store) Attachment(ctx context.Context, session, sha string) (loop.Attachment, error) {
	a := loop.Attachment{SHA256: sha}
	err := s.db.QueryRow(ctx, `SELECT mime, data FROM attachments WHERE session = $1 AND sha256 = $2`, session, sha).Scan(&a.MimeType, &a.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, loop.ErrNoAttachment)
	}
	if err != nil {
		return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, err)
	}
	if s.keys != nil {
		if a.Data, err = s.keys.Open(a.Data, seal.AttachmentAAD(session, sha)); err != nil {
			return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, err)
		}
	}
	return a, nil
}

func (s *Store) attachmentsTable() *resealTable {
	return &resealTable{name: "attachments", start: []any{"", ""},
		// 8 at a time: the rows are large.
		page:   `SELECT session, sha256, data FROM attachments WHERE (session, sha256) > ($1, $2) ORDER BY session, sha256 LIMIT LEAST($3, 8)`,
		one:    `SELECT session, sha256, data FROM attachments WHERE session = $1 AND sha256 = $2`,
		update: `UPDATE attachments SET data = $1 WHERE session = $2 AND sha256 = $3 AND data = $4`,
		scan: func(rows pgx.Rows) (seal.Row, error) {
			var session, sha string
			var data []byte
			err := rows.Scan(&session, &sha, &data)
			return seal.Row{Key: []any{session, sha}, Old: []any{data}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			return s.resealValue(r, r.Old[0].([]byte), seal.AttachmentAAD(r.Key[0].(string), r.Key[1].(string)), "session %q attachment %s", r.Key...)
		}}
}
