package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/storetest"
	"github.com/agenthost/agenthost/workflow"
)

var errKilled = errors.New("killed")

// dyingStore is a process killed right after its first call's end was stored: every
// write after it fails, as nothing more of the dead process reaches the database.
type dyingStore struct {
	*Store
	dead atomic.Bool
}

func (d *dyingStore) write(f func() error) error {
	if d.dead.Load() {
		return errKilled
	}
	return f()
}

func (d *dyingStore) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, es ...loop.Entry) error {
	err := d.write(func() error { return d.Store.AppendRunKV(ctx, r, kv, es...) })
	if err == nil && r.Status != "" {
		d.dead.Store(true)
	}
	return err
}
func (d *dyingStore) AppendRun(ctx context.Context, r loop.RunRecord, es ...loop.Entry) error {
	return d.write(func() error { return d.Store.AppendRun(ctx, r, es...) })
}
func (d *dyingStore) Append(ctx context.Context, id string, es ...loop.Entry) error {
	return d.write(func() error { return d.Store.Append(ctx, id, es...) })
}
func (d *dyingStore) SaveRun(ctx context.Context, r loop.RunRecord) error {
	return d.write(func() error { return d.Store.SaveRun(ctx, r) })
}
func (d *dyingStore) KVSet(ctx context.Context, ns, key string, v []byte) error {
	return d.write(func() error { return d.Store.KVSet(ctx, ns, key, v) })
}
func (d *dyingStore) RenewLease(ctx context.Context, l loop.Lease) error {
	return d.write(func() error { return d.Store.RenewLease(ctx, l) })
}
func (d *dyingStore) ReleaseLease(ctx context.Context, l loop.Lease) error {
	return d.write(func() error { return d.Store.ReleaseLease(ctx, l) })
}

// A workflow tool step's end is stored in its call's end transaction on PostgreSQL
// (AppendRunKV): a process killed right after its first call's end loses nothing, and
// the resume does not make that call again. PostgreSQL used to set the step's end just
// after the call's end, so this kill made the resume call the tool a fourth time.
func TestL21_AKillAfterACallsEndOnPostgreSQLRepeatsNoCall(t *testing.T) {
	s := open(t, pgtest.Start(t).NewDatabase(t))
	ctx := context.Background()
	w, err := workflow.Compile("chain", workflow.Definition{Steps: []workflow.Step{
		{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"a"}}},
		{ID: "b", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}", "b"}}},
		{ID: "c", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.b.output}", "c"}}, Output: "out"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	d := &dyingStore{Store: s}
	e := &workflow.Engine{Store: d, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, d, &calls)}}
	if _, err := e.Run(ctx, w, workflow.RunInput{RunID: "k1"}, nil); !errors.Is(err, errKilled) || calls.Load() != 1 {
		t.Fatalf("the killed run: %v, %d calls", err, calls.Load())
	}
	rec, ok, err := workflow.LoadRecord(ctx, s, "chain", "k1")
	if err != nil || !ok || rec.Status != workflow.RunRunning || rec.Steps["a"] == nil || rec.Steps["a"].Output != "a" {
		t.Fatalf("stored at the kill: %+v ok=%v %v", rec, ok, err)
	}
	e2 := &workflow.Engine{Store: s, Exec: workflow.AgentExecutor{Agent: storetest.JoinAgent(t, s, &calls)}}
	res, err := e2.Run(ctx, w, workflow.RunInput{RunID: "k1"}, nil)
	if err != nil || res.Record.Status != workflow.RunCompleted || res.Record.Outputs["out"] != "a-b-c" {
		t.Fatalf("resume: %v %+v", err, res.Record)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("join called %d times in all, want 3", got)
	}
}
