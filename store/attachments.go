package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

var _ loop.AttachmentStore = (*SQLite)(nil)

// migrateV15Attachments adds the attachments of sessions (loop.AttachmentStore): one row
// per session and hash, the bytes sealed, their plain size counted against the session's
// limit. A rowid table: its rows are large, which WITHOUT ROWID handles badly.
func migrateV15Attachments(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE attachments (
	session TEXT    NOT NULL,
	sha256  TEXT    NOT NULL,
	mime    TEXT    NOT NULL,
	size    INTEGER NOT NULL,
	data    BLOB    NOT NULL
);
CREATE UNIQUE INDEX attachments_by_session ON attachments (session, sha256);`)
	return err
}

// PutAttachment implements loop.AttachmentStore: the session's total is read and the row
// inserted in one write transaction, so two runs cannot both pass the limit.
func (s *SQLite) PutAttachment(ctx context.Context, session string, a loop.Attachment, sessionLimit int64) error {
	data := s.keys.Seal(a.Data, seal.AttachmentAAD(session, a.SHA256))
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var held, total int64
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE sha256 = ?), COALESCE(SUM(size), 0) FROM attachments WHERE session = ?`,
			a.SHA256, session).Scan(&held, &total)
		if err != nil || held > 0 {
			return err
		}
		if total += int64(len(a.Data)); total > sessionLimit {
			return fmt.Errorf("%w: the session's attachments would take %d bytes, over its %d-byte limit", loop.ErrAttachmentTooLarge, total, sessionLimit)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO attachments (session, sha256, mime, size, data) VALUES (?, ?, ?, ?, ?)`,
			session, a.SHA256, a.MimeType, len(a.Data), data)
		return err
	})
	if err != nil {
		return fmt.Errorf("store attachment %.12s: %w", a.SHA256, err)
	}
	return nil
}

// Attachment implements loop.AttachmentStore.
func (s *SQLite) Attachment(ctx context.Context, session, sha string) (loop.Attachment, error) {
	if err := s.watch.check(); err != nil {
		return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, err)
	}
	a := loop.Attachment{SHA256: sha}
	err := s.queryRow(ctx, `SELECT mime, data FROM attachments WHERE session = ? AND sha256 = ?`, session, sha).Scan(&a.MimeType, &a.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, loop.ErrNoAttachment)
	}
	if err == nil && s.keys != nil {
		a.Data, err = s.keys.Open(a.Data, seal.AttachmentAAD(session, sha))
	}
	if err != nil {
		return loop.Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, err)
	}
	return a, nil
}

func (s *SQLite) resealAttachments(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:   "attachments",
		start:  []any{"", ""},
		page:   `SELECT session, sha256, data FROM attachments WHERE (session, sha256) > (?, ?) ORDER BY session, sha256 LIMIT min(?, 8)`, // 8 at a time: the rows are large,
		one:    `SELECT session, sha256, data FROM attachments WHERE session = ? AND sha256 = ?`,
		update: `UPDATE attachments SET data = ? WHERE session = ? AND sha256 = ? AND CAST(data AS BLOB) IS CAST(? AS BLOB)`,
		scan: func(rows *sql.Rows) (seal.Row, error) {
			var session, sha string
			var data []byte
			err := rows.Scan(&session, &sha, &data)
			return seal.Row{Key: []any{session, sha}, Old: []any{data}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			data, aad := r.Old[0].([]byte), seal.AttachmentAAD(r.Key[0].(string), r.Key[1].(string))
			return s.resealValue(r, data, aad, "session %q attachment %s", r.Key...)
		},
	})
}
