package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
)

// Erasure in the file. secure_delete (set on every connection) makes SQLite overwrite
// what a DELETE frees, and the memory index deletes securely (FTS5 secure-delete), but in
// WAL mode a commit appends whole pages to the -wal file: the pages the erased rows were
// inserted in stay there, after the zeroed pages the DELETE wrote, until a checkpoint
// copies the latest pages into the database and the log is started again. SQLite
// restarts the log only once every reader has moved on and never shrinks it, so the
// erased words stayed in the -wal file for as long as serve ran (issue 46). A delete
// that erases (a session, memories) therefore checkpoints with TRUNCATE before it
// answers: the database gets the zeroed pages and the -wal file is cut to nothing.

// ErrNotScrubbed is a delete that was committed but whose words could still be in the
// -wal file: a reader held an old snapshot for longer than the store waited.
var ErrNotScrubbed = errors.New("the deleted rows are gone, but their bytes may remain in the -wal file (a reader held it): delete again once it ends")

// scrubWait bounds how long an erasing delete waits for readers to let the log go.
const scrubWait = 30 * time.Second

// scrub checkpoints the whole log into the database and truncates the -wal file. SQLite
// waits (busy_timeout) for the writer and for readers on older snapshots; a reader that
// holds on past that answers busy, and scrub tries again until scrubWait.
func (s *SQLite) scrub(ctx context.Context) error {
	deadline := time.Now().Add(scrubWait)
	wait := 10 * time.Millisecond
	for {
		busy, err := s.checkpoint(ctx)
		if err != nil && ctx.Err() != nil { // the caller left while SQLite waited
			return fmt.Errorf("%w: %w", ErrNotScrubbed, context.Cause(ctx))
		}
		if err != nil {
			return unavailable(err)
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrNotScrubbed
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotScrubbed, context.Cause(ctx))
		case <-time.After(wait): // a reader still on an old snapshot: try again, with backoff
		}
		wait = min(2*wait, time.Second)
	}
}

// checkpoint runs one PRAGMA wal_checkpoint(TRUNCATE) on a connection of the pool (not in
// a transaction, which the writer's always is while it writes) and reports whether it
// could not complete.
func (s *SQLite) checkpoint(ctx context.Context) (busy bool, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	var b, log, done int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&b, &log, &done); err != nil {
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == 5 { // SQLITE_BUSY: past busy_timeout
			return true, nil
		}
		return false, err
	}
	return b != 0, nil
}
