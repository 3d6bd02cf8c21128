package seal

import (
	"context"
	"fmt"
	"time"
)

// A re-seal pass (`agenthost store rotate-key`) runs while other processes write (`serve`
// beside it). A row is read, re-sealed, and written back only if its sealed columns
// still hold what was read: one UPDATE ... WHERE they are unchanged, a compare-and-set (a
// fresh nonce makes every write of a value differ, so "unchanged" means "not written
// since"). A row that changed meanwhile is skipped and read again after the pass; one
// that is gone, or now sealed with the current key by its writer, needs nothing more.
// Both stores run the same pass (Pass); each says how it reads and writes a table's
// rows (Table).

// PassBatch bounds one transaction of a pass, so writers are not held for long.
const PassBatch = 256

// passRounds is how many times a row that keeps changing is read again before the pass
// gives up on it (and says to run it again).
const passRounds = 8

// passPause is the wait before the first round of re-reading, doubled each round after
// (2.5 s over the 8 rounds): a writer still on the old key gets time to read the new one.
const passPause = 10 * time.Millisecond

// Row is one row of a pass: its key columns, the sealed columns as read, and what they
// become (set by Table.Reseal).
type Row struct {
	Key, Old, Set []any
}

// Table is how a store reads and writes one table's rows for Pass.
type Table struct {
	Start []any // the key before every row
	// Page reads at most PassBatch rows after a key, in key order.
	Page func(ctx context.Context, after []any) ([]Row, error)
	// One reads the row of one key (none when it is gone).
	One func(ctx context.Context, key []any) ([]Row, error)
	// Reseal fills r.Set and reports whether the row needs writing (false: it is under
	// the current key).
	Reseal func(r *Row) (stale bool, err error)
	// CAS writes the rows in one transaction, each only if its sealed columns still hold
	// Old, and returns how many it wrote and the keys of the rows that had changed.
	CAS func(ctx context.Context, rows []Row) (n int, changed [][]any, err error)
}

// Pass re-seals every stale row of a table: a pass in key order, then the rows that
// changed while it ran, read again, up to passRounds times. It returns how many rows it
// re-sealed and how many it found changed since it read them.
func Pass(ctx context.Context, t Table) (done, changed int, err error) {
	var retry [][]any // keys of the rows that changed since they were read
	for after := t.Start; ; {
		batch, err := t.Page(ctx, after)
		if err != nil {
			return done, changed, err
		}
		if len(batch) == 0 {
			break
		}
		after = batch[len(batch)-1].Key
		n, ch, err := write(ctx, t, batch)
		done, changed, retry = done+n, changed+len(ch), append(retry, ch...)
		if err != nil {
			return done, changed, err
		}
	}
	for round := 1; len(retry) > 0; round++ {
		if round > passRounds {
			return done, changed, fmt.Errorf("%d row(s) changed each of the %d times they were re-sealed (a process still sealing with an older key?): run it again", len(retry), passRounds)
		}
		select { // a writer still on the old key gets time to read the new one (serve polls every 2 s)
		case <-ctx.Done():
			return done, changed, ctx.Err()
		case <-time.After(passPause << (round - 1)):
		}
		var again []Row
		for _, key := range retry {
			rows, err := t.One(ctx, key)
			if err != nil {
				return done, changed, err
			}
			again = append(again, rows...) // none: deleted meanwhile
		}
		n, ch, err := write(ctx, t, again)
		done, changed, retry = done+n, changed+len(ch), ch
		if err != nil {
			return done, changed, err
		}
	}
	return done, changed, nil
}

// write re-seals the stale rows of batch and writes them (Table.CAS).
func write(ctx context.Context, t Table, batch []Row) (int, [][]any, error) {
	var todo []Row
	for i := range batch {
		stale, err := t.Reseal(&batch[i])
		if err != nil {
			return 0, nil, err
		}
		if stale {
			todo = append(todo, batch[i])
		}
	}
	if len(todo) == 0 {
		return 0, nil, nil
	}
	return t.CAS(ctx, todo)
}
