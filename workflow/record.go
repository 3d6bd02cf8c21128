package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A run's state is a record in the session store's key-value table
// (loop.SessionStore.KVSet), under the namespace KVNamespace and the key "NAME/RUNID",
// each step's part in a row of its own (rows.go). It is written when a step starts, when
// an item of a fan-out ends and when a step ends, before the next outside call: what a
// resumed run finds there is what happened.
// A tool step's end is written in its call's own transaction (as its run's note, where
// the store keeps one), its start is its call's open run (fold.go, notes.go), and the run's first and last records ride on its
// lease's transactions (lease.go).
// The tool calls themselves are stored by the tool pipeline, as runs of their own
// sessions (StepSession: "workflow:NAME[:OWNER]:RUNID~STEP[~ITEM]", owner.go). KV rather than events of a session: a
// run's record is read whole and written by one writer, needs no sequence numbers,
// and the KV table is already in every store (memory, SQLite, PostgreSQL) with no
// migration; the per-call events stay where the loop puts them.
const KVNamespace = "agenthost/workflows"

// Step statuses in a record and in step_finished events.
const (
	StatusRunning  = "running"  // started, not ended: a resumed run runs it again
	StatusOK       = "ok"       // ended with an output
	StatusFailed   = "failed"   // every attempt failed; the run fails
	StatusSkipped  = "skipped"  // its if was false, or a dependency was skipped or rejected
	StatusWaiting  = "waiting"  // an approval step without a decision
	StatusRejected = "rejected" // an approval step a human refused
)

// Run statuses.
const (
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunFailed      = "failed"
	RunInterrupted = "interrupted" // waiting for an approval; resume with Approvals
	RunAborted     = "aborted"     // the context ended; resume runs what did not end
)

// Record is a run's stored state.
type Record struct {
	Workflow string                 `json:"workflow"`
	RunID    string                 `json:"run_id"`
	Owner    string                 `json:"owner,omitempty"` // the id of the user it is for
	Inputs   json.RawMessage        `json:"inputs"`
	Status   string                 `json:"status"`
	Started  time.Time              `json:"started"`
	Ended    time.Time              `json:"ended,omitzero"`
	Outputs  map[string]any         `json:"outputs,omitempty"`
	Error    string                 `json:"error,omitempty"`
	Steps    map[string]*StepRecord `json:"steps"`
}

// StepRecord is one step's stored state.
type StepRecord struct {
	Status   string        `json:"status"`
	Started  time.Time     `json:"started,omitzero"`
	Ended    time.Time     `json:"ended,omitzero"`
	Attempts int           `json:"attempts,omitempty"`
	Output   any           `json:"output,omitempty"`
	Error    string        `json:"error,omitempty"`
	Items    []*ItemRecord `json:"items,omitempty"` // a for_each step's items, in list order
}

// ItemRecord is one item of a for_each step: an item that ended ok is not run again.
type ItemRecord struct {
	Status string `json:"status"`
	Output any    `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

func recordKey(workflow, owner, runID string) string {
	if owner == "" {
		return workflow + "/" + runID
	}
	return workflow + "/" + owner + "/" + runID
}

// LoadRecord reads the record of a run without an owner (one the store's operator
// started); ok is false when there is none.
func LoadRecord(ctx context.Context, st loop.SessionStore, workflow, runID string) (*Record, bool, error) {
	return LoadOwnedRecord(ctx, st, workflow, "", runID)
}

// LoadOwnedRecord reads owner's run's record; ok is false when owner has no such run,
// whoever else has one under that id.
func LoadOwnedRecord(ctx context.Context, st loop.SessionStore, workflow, owner, runID string) (*Record, bool, error) {
	r, h, ok, err := loadStored(ctx, st, workflow, runID, recordKey(workflow, owner, runID), false)
	if err != nil || !ok {
		return nil, false, err
	}
	if err := fromCalls(ctx, st, r, h, owner, true); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// RunSummary is a stored run as GET /v1/workflows/{name}/runs lists it.
type RunSummary struct {
	RunID   string    `json:"run_id"`
	Owner   string    `json:"owner,omitempty"`
	Status  string    `json:"status"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// maxListedRuns bounds how many stored runs ListRuns reads.
const maxListedRuns = 1000

// ErrNoListing is returned by ListRuns for a store that cannot list keys.
var ErrNoListing = errors.New("this store cannot list workflow runs (it does not implement loop.KVLister)")

// ListRuns lists a workflow's stored runs, the latest started first, at most limit
// (of the first 1,000 by key), every owner's. Sub-runs (RUNID.STEP) are the
// sub-workflow's runs.
func ListRuns(ctx context.Context, st loop.SessionStore, workflow string, limit int) ([]RunSummary, error) {
	l, ok := st.(loop.KVLister)
	if !ok {
		return nil, ErrNoListing
	}
	keys, err := l.KVKeys(ctx, KVNamespace, recordKey(workflow, "", ""), maxListedRuns)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: list runs: %w", workflow, err)
	}
	out := make([]RunSummary, 0, len(keys))
	for _, k := range keys {
		rest := strings.TrimPrefix(k, recordKey(workflow, "", ""))
		r, _, ok, err := loadStored(ctx, st, workflow, rest[strings.LastIndexByte(rest, '/')+1:], k, true) // the head is the summary
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, RunSummary{RunID: r.RunID, Owner: r.Owner, Status: r.Status, Started: r.Started, Ended: r.Ended, Error: r.Error})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
