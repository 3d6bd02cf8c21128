package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// Group commit. SQLite admits one writer at a time, and a commit costs about the same
// whether it carries one append or fifty (it writes each changed page to the WAL once).
// So this process's writes queue up, and whoever finds no write in progress leads: it
// takes everything queued, runs each in a savepoint of one transaction on the store's
// write connection, commits, and wakes the writers it carried, each with its own
// result, after the commit made their writes durable. If more queued meanwhile, the
// first of them leads next. A lone write is committed by its own caller, with no
// goroutine hand-off; under load a thousand runs share a few commits.

// maxGroup bounds the writes one transaction carries, so a leader's turn is bounded.
const maxGroup = 128

// writeFn is one write: statements on tx, which it shares with others of its group.
type writeFn func(ctx context.Context, tx *wtx) error

type writeOp struct {
	ctx  context.Context
	do   writeFn
	err  error
	lead bool          // woken to lead, not because its write is done
	wake chan struct{} // closed once: written (or failed), or asked to lead
}

type writeQueue struct {
	mu   sync.Mutex
	ops  []*writeOp
	busy bool // a leader is committing
}

// The statements every append and run record runs, prepared when the writer opens (so
// a schema they do not fit fails the open) and kept in its stmtCache.
const (
	qUpsertRun = `INSERT INTO runs (sid, id, session, status, reason, started, ended, usage, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sid, id) DO UPDATE SET status = excluded.status, reason = excluded.reason, ended = excluded.ended, usage = excluded.usage, note = excluded.note`
	qDropLease = `DELETE FROM leases WHERE session = ? AND run_id = ?`
	qLeaseOf   = `SELECT session, run_id, pid, host, instance, heartbeat FROM leases WHERE session = ?`
)

// writer is the connection every write of this process goes through, with every
// statement it runs prepared once (stmts, wtx).
type writer struct {
	conn    *sql.Conn
	stmts   stmtCache
	q       writeQueue
	commits atomic.Int64 // transactions committed, for tests and diagnostics
	// unsure: a ROLLBACK failed, so the connection may still be in a transaction, and
	// a read on it (pointreads.go) could see writes never committed. Reads keep off it
	// until a transaction begins and commits on it again. Read and written by the
	// connection's holder only (the queue's lead).
	unsure bool
	keys   *seal.Keys // seals the transcript projection as the entries are (transcript.go)
	// check, when set, runs before every transaction; its error fails the group
	// unwritten (the database file gone: unavailable.go).
	check func() error
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn}
	// The connection may cache the schema as it was before another opener migrated it,
	// and a statement is compiled against the cached schema. Running a statement on a
	// table notices the change and reloads it.
	var v int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE 0`).Scan(&v); err != nil {
		w.close()
		return nil, err
	}
	for _, q := range []string{qWriteState, qNewSessionKey, qInsertRows[1], qUpsertRun, qDropLease, qLeaseOf} {
		if _, err := w.stmts.get(ctx, conn, q); err != nil {
			w.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	return w, nil
}

func (w *writer) close() error {
	w.stmts.close()
	return w.conn.Close()
}

// write runs do in a transaction of this process's next group commit and returns its
// result once that transaction is committed (or has failed).
func (w *writer) write(ctx context.Context, do writeFn) error {
	op := &writeOp{ctx: ctx, do: do, wake: make(chan struct{})}
	w.q.mu.Lock()
	w.q.ops = append(w.q.ops, op)
	if w.q.busy {
		w.q.mu.Unlock()
		<-op.wake
		if !op.lead {
			return op.err
		}
	} else {
		w.q.busy = true
		w.q.mu.Unlock()
	}
	// Leading: commit what is queued (op first among it), then hand the lead on.
	w.q.mu.Lock()
	n := min(len(w.q.ops), maxGroup)
	group := append([]*writeOp(nil), w.q.ops[:n]...)
	w.q.ops = append(w.q.ops[:0], w.q.ops[n:]...)
	w.q.mu.Unlock()
	w.commit(group, op)
	w.handOff()
	return op.err
}

// handOff ends a lead: the first write queued meanwhile leads next, or the writer is idle.
func (w *writer) handOff() {
	w.q.mu.Lock()
	if len(w.q.ops) > 0 {
		next := w.q.ops[0]
		next.lead = true
		close(next.wake)
	} else {
		w.q.busy = false
	}
	w.q.mu.Unlock()
}

// tryHold takes the writer's connection for a read when no write holds or awaits it
// and no transaction can be open on it (pointreads.go); handOff gives it back.
func (w *writer) tryHold() bool {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	if w.q.busy || w.unsure {
		return false
	}
	w.q.busy = true
	return true
}

// commit runs a group in one transaction, each write in a savepoint of its own when
// there are several, so that one failing write fails alone.
func (w *writer) commit(group []*writeOp, self *writeOp) {
	defer func() {
		for _, op := range group {
			if op != self {
				close(op.wake)
			}
		}
	}()
	failAll := func(err error) {
		for _, op := range group {
			if op.err == nil {
				op.err = err
			}
		}
	}
	if w.check != nil {
		if err := w.check(); err != nil {
			failAll(err)
			return
		}
	}
	ctx := context.WithoutCancel(self.ctx) // the group's transaction outlives any one caller
	if err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		failAll(unavailable(err))
		return
	}
	tx := &wtx{w}
	ok := 0
	for _, op := range group {
		if op.err = op.ctx.Err(); op.err != nil {
			continue
		}
		// A write that has started is finished even if its caller leaves meanwhile:
		// SQLite answers an interrupted write statement by rolling back the whole
		// transaction, the group's other writes with it, and what ran after it would
		// run outside any transaction.
		octx := context.WithoutCancel(op.ctx)
		if len(group) == 1 {
			op.err = unavailable(op.do(octx, tx))
		} else {
			op.err = unavailable(savepoint(octx, tx, op.do))
		}
		if op.err == nil {
			ok++
		}
	}
	if ok == 0 {
		w.rollback(ctx)
		return
	}
	if err := w.exec(ctx, "COMMIT"); err != nil {
		w.rollback(ctx) // a COMMIT that failed may leave the transaction open
		failAll(unavailable(err))
		return
	}
	w.commits.Add(1)
	w.unsure = false
}

// rollback ends the transaction without its writes. SQLite may have ended it already
// (a statement interrupted by its context, a failed COMMIT), which is not an error, but
// leaves the connection unsure for reads.
func (w *writer) rollback(ctx context.Context) {
	if w.exec(ctx, "ROLLBACK") != nil {
		w.unsure = true
	}
}

func savepoint(ctx context.Context, tx *wtx, do writeFn) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
		return err
	}
	if err := do(ctx, tx); err != nil {
		if _, rerr := tx.ExecContext(context.WithoutCancel(ctx), `ROLLBACK TO w`); rerr != nil {
			return fmt.Errorf("%w (and undoing it: %v)", err, rerr)
		}
		tx.ExecContext(context.WithoutCancel(ctx), `RELEASE w`)
		return err
	}
	_, err := tx.ExecContext(ctx, `RELEASE w`)
	return err
}

// encoded is an entry ready to insert: encoded before the write queues, so the group's
// transaction spends its time writing.
type encoded struct {
	seq               int64
	runID, time, kind string
	body              []byte
	src               *loop.Entry // the entry (the caller's, for the write's length): its projection is made only by a write that extends it (transcript.go)
}

func encodeEntries(keys *seal.Keys, session string, entries []loop.Entry) ([]encoded, error) {
	out := make([]encoded, len(entries))
	for i, e := range entries {
		body, err := marshalEntry(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		if keys != nil {
			body = keys.Seal(body, seal.EntryAAD(session, e.Seq))
		}
		out[i] = encoded{seq: e.Seq, runID: e.RunID, time: e.Time.UTC().Format(timeText), kind: string(e.Kind), body: body, src: &entries[i]}
	}
	return out, nil
}

// appendTx inserts encoded entries after the session's last one; the batch must follow
// it without a gap. A fenced write (sessionTx) is checked first.
func (w *writer) appendTx(ctx context.Context, tx *wtx, session string, es []encoded) error {
	if len(es) == 0 {
		return nil
	}
	ws, err := sessionTx(ctx, tx, session, "", nil)
	if err != nil {
		return err
	}
	return w.appendRowsTx(ctx, tx, ws, session, es)
}

// appendRowsTx is appendTx in a transaction whose write already read the session's
// write state (sessionTx: one read a write, not one a statement).
func (w *writer) appendRowsTx(ctx context.Context, tx *wtx, ws writeState, session string, es []encoded) error {
	if len(es) == 0 {
		return nil
	}
	for i, e := range es {
		if want := ws.last + int64(i) + 1; e.seq != want {
			return &seqError{fmt.Errorf("session %q: append seq %d, want %d (another run writing?)", session, e.seq, want)}
		}
	}
	if err := w.insertEntriesTx(ctx, tx, ws.sid, session, es); err != nil {
		return err
	}
	return w.appendTranscriptTx(ctx, tx, ws, session, es)
}

// saveRunTx saves a run record, fenced, and returns its session's write state. With a
// claim, the claim's lease is taken first, and a record of the run's id stored before
// refuses the write (ErrRunExists).
func (w *writer) saveRunTx(ctx context.Context, tx *wtx, r loop.RunRecord, c *claim) (writeState, error) {
	ws, err := sessionTx(ctx, tx, r.SessionID, r.ID, c)
	if err != nil {
		return ws, err
	}
	if ws.runUsed {
		return ws, fmt.Errorf("run %q on session %q: %w", r.ID, r.SessionID, loop.ErrRunExists)
	}
	usage, _ := json.Marshal(r.Usage)
	var note []byte // NULL: none
	if r.Note != "" {
		note = w.keys.Seal([]byte(r.Note), seal.RunNoteAAD(r.SessionID, r.ID))
	}
	_, err = tx.ExecContext(ctx, qUpsertRun,
		ws.sid, r.ID, r.SessionID, string(r.Status), string(r.Reason), formatTime(r.Started), formatTime(r.Ended), string(usage), note)
	return ws, err
}

// seqError is an append that does not follow the session's last entry: its message
// names the session already.
type seqError struct{ error }

func (e *seqError) Unwrap() error { return e.error }

// appendError names the session of a failed append.
func appendError(session string, err error) error {
	if _, ok := err.(*seqError); ok {
		return err
	}
	return fmt.Errorf("append to session %q: %w", session, err)
}
