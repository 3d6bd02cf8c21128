package store

import (
	"context"
	"database/sql"

	"github.com/agenthost/agenthost/store/seal"
)

// A run's note (loop.RunRecord.Note) is kept in its row of runs, sealed like the
// entries (seal.RunNoteAAD), NULL when the run has none. A workflow's tool step stores
// its end there, in its call's last write (workflow/fold.go): a row of kv of its own
// cost a page of another table in every call's end commit.

// migrateV19RunNotes adds runs.note. Adding a nullable column rewrites no row.
func migrateV19RunNotes(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE runs ADD COLUMN note BLOB`)
	return err
}

// KeepsRunNotes implements loop.RunNoter: AppendRunKV stores a run's note with its
// record, and Runs gives it back.
func (s *SQLite) KeepsRunNotes() {}

// openNote is a stored note's text ("" for NULL).
func (s *SQLite) openNote(b []byte, session, run string) (string, error) {
	if b == nil {
		return "", nil
	}
	if s.keys != nil {
		var err error
		if b, err = s.keys.Open(b, seal.RunNoteAAD(session, run)); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

// resealRunNotes re-seals the notes of runs not sealed with the current key.
func (s *SQLite) resealRunNotes(ctx context.Context) (int, int, error) {
	return s.resealTable(ctx, &resealTable{
		name:   "runs",
		start:  []any{int64(0), ""},
		page:   `SELECT sid, id, note, session FROM runs WHERE (sid, id) > (?, ?) AND note IS NOT NULL ORDER BY sid, id LIMIT ?`,
		one:    `SELECT sid, id, note, session FROM runs WHERE sid = ? AND id = ? AND note IS NOT NULL`,
		update: `UPDATE runs SET note = ? WHERE sid = ? AND id = ? AND CAST(note AS BLOB) IS CAST(? AS BLOB) AND session IS ?`,
		scan: func(rows *sql.Rows) (seal.Row, error) {
			var sid int64
			var id, session string
			var note []byte
			err := rows.Scan(&sid, &id, &note, &session)
			return seal.Row{Key: []any{sid, id}, Old: []any{note, session}}, err
		},
		reseal: func(r *seal.Row) (bool, error) {
			session, id := r.Old[1].(string), r.Key[1].(string)
			return s.resealValue(r, r.Old[0].([]byte), seal.RunNoteAAD(session, id), "session %q run %q note", session, id)
		},
	})
}
