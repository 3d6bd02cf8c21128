package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A run's record is stored as rows: its head (every field but the steps) under the run's
// key in KVNamespace, and each step's record in a row of its own in StepsNamespace, under
// the head's rows_at (rowsAt: the run's start time and key) and the step's id. The head
// names the steps that have rows (step_rows: the workflow's steps when the run was
// created, and any added since); its "steps" holds the steps of a record stored whole
// (read as they are, and moved to rows by the run's next write that is not its last):
// a record from before rows, or that of a run which ended with no step row stored
// (whole.go). A write stores only what changed since the
// run's last write: the step that started or ended (~150 bytes), the head when a run
// field or the list changed (a run's first and last writes). Stored whole, a write was
// the whole record, O(steps) bytes (from ~1 KB on an SQLite overflow page and its free
// list), at each of a step's two writes.
//
// A write's rows are stored before its head, in one transaction where the write rides
// on a call's (fold.go) or on the lease (lease.go), else one by one: a process killed
// between them leaves rows newer than the head, which is the state of a run whose
// steps were written and whose head was not — the head's fields are the run's start
// and end, which a resumed run sets again.
const StepsNamespace = "agenthost/workflow-steps"

// storedHead is a record's stored head: the record (Steps only for a record stored
// whole), and the steps stored as rows.
type storedHead struct {
	Record
	StepRows []string `json:"step_rows,omitempty"`
	RowsAt   string   `json:"rows_at,omitempty"`
}

// rowsAt is the start of the keys of a run's step rows: the run's start time (UTC,
// fixed width), its key and "/". Run ids are random, so rows keyed by the run's key alone
// landed at random places in the table (a leaf split now and then as it filled); by start
// time, a new run's rows go after every earlier run's, in the table's last leaf.
func rowsAt(runKey string, started time.Time) string {
	return started.UTC().Format("20060102T150405.000000000") + "/" + runKey + "/"
}

// loadStored reads a run's record: its head under key and, unless headOnly, the rows it
// names (a row not there is a step not started); h is the head as stored.
func loadStored(ctx context.Context, st loop.SessionStore, workflow, runID, key string, headOnly bool) (*Record, *storedHead, bool, error) {
	b, ok, err := st.KVGet(ctx, KVNamespace, key)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	var h storedHead
	b, err = headBytes(b)
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("workflow %s run %s: stored record is not readable: %w", workflow, runID, err)
	}
	r := &h.Record
	if r.Steps == nil {
		r.Steps = map[string]*StepRecord{}
	}
	for _, id := range h.StepRows {
		if headOnly {
			break
		}
		sb, ok, err := st.KVGet(ctx, StepsNamespace, h.RowsAt+id)
		if err != nil {
			return nil, nil, false, err
		}
		if !ok {
			continue
		}
		var sr *StepRecord
		if err := json.Unmarshal(sb, &sr); err != nil {
			return nil, nil, false, fmt.Errorf("workflow %s run %s: stored step %s is not readable: %w", workflow, runID, id, err)
		}
		r.Steps[id] = sr
	}
	return r, &h, true, nil
}

// recWriter makes a run's writes (one per run, sched.enc, used under s.mu): it keeps
// what it last stored, so a write holds only what changed. A step's stored row is known
// by the *StepRecord it was made from; a running record is changed in place (its
// attempts, its items, finish ending it), so it is encoded at every write and stored
// when its bytes changed, while one that ended or waits is never changed in place (a
// new start, settle or adopted end is a new *StepRecord). Whoever changes an ended
// step's record in place must make a new one instead, or its row would go stale.
type recWriter struct {
	key   string
	at    string               // rowsAt
	ids   []string             // the step ids the stored head names, sorted
	rows  map[string]storedRow // each step's stored row
	headB []byte               // the stored head; nil: not known (written at the next write)
	inl   bool                 // the stored head holds the steps (stored whole): write every row
	head  headCache
	scr   []string // scratch: the record's step ids
}

type storedRow struct {
	r     *StepRecord
	b     []byte // nil: not known (a row read back)
	ended bool   // r was not running when stored: it is never changed in place since
}

// start sets what is stored: the head b (nil: not known) naming ids with rows at at,
// and the steps of a record read back; inline: the head holds them (a record stored
// whole).
func (e *recWriter) start(key, at string, b []byte, ids []string, steps map[string]*StepRecord, inline bool) {
	e.key, e.at, e.headB, e.inl = key, at, b, inline
	e.ids = slices.Sorted(slices.Values(ids))
	e.rows = map[string]storedRow{}
	for id, r := range steps {
		if _, named := slices.BinarySearch(e.ids, id); named && !inline {
			e.rows[id] = storedRow{r: r, ended: r != nil && r.Status != StatusRunning}
		}
	}
}

// writes are the writes that store r (its rows first, then its head) and done, which
// makes them what is stored, to be called once they were.
func (e *recWriter) writes(r *Record) ([]loop.KVWrite, func(), error) {
	if e.rows == nil {
		e.rows = map[string]storedRow{}
	}
	if r.Status != RunRunning && len(e.rows) == 0 { // no row stored: the record whole
		return e.whole(r)
	}
	e.scr = e.scr[:0]
	for id := range r.Steps {
		e.scr = append(e.scr, id)
	}
	slices.Sort(e.scr)
	ids := e.ids
	kv := make([]loop.KVWrite, 0, 2) // a step's row; the head at a run's first and last writes
	type made struct {
		id  string
		row storedRow
	}
	rows := make([]made, 0, 1)
	for _, id := range e.scr {
		if _, named := slices.BinarySearch(ids, id); !named {
			ids = append(slices.Clone(ids), id)
			slices.Sort(ids)
		}
		sr := r.Steps[id]
		old, had := e.rows[id]
		if had && !e.inl && old.r == sr && old.ended {
			continue
		}
		b, err := appendStepValue(make([]byte, 0, 256), sr)
		if err != nil {
			return nil, nil, err
		}
		if !had || e.inl || !bytes.Equal(b, old.b) {
			kv = append(kv, loop.KVWrite{Namespace: StepsNamespace, Key: e.at + id, Value: b})
		}
		rows = append(rows, made{id, storedRow{r: sr, b: b, ended: sr != nil && sr.Status != StatusRunning}})
	}
	hb, err := e.head.bytes(r, ids, e.at)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(hb, e.headB) {
		kv = append(kv, loop.KVWrite{Namespace: KVNamespace, Key: e.key, Value: hb})
	}
	return kv, func() {
		for _, m := range rows {
			e.rows[m.id] = m.row
		}
		e.ids, e.headB, e.inl = ids, hb, false
	}, nil
}

// headJSON is r's stored head naming ids, with rows at at (r's steps are in rows).
func headJSON(r *Record, ids []string, at string) ([]byte, error) {
	h := storedHead{Record: *r, StepRows: ids, RowsAt: at}
	h.Steps = map[string]*StepRecord{}
	return json.Marshal(&h)
}

// stepIDs are w's step ids, which a new run's head names.
func (w *Workflow) stepIDs() []string {
	ids := make([]string, len(w.steps))
	for i, cs := range w.steps {
		ids[i] = cs.ID
	}
	return ids
}
