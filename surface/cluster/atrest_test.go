package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/postgres"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/workflow"
)

// keyedStore opens the store of a new database with a fresh key ring, as [store]
// key_file does.
func keyedStore(t *testing.T) (string, *postgres.Store) {
	t.Helper()
	url := pgtest.Start(t).NewDatabase(t)
	k, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.Parse(k)
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.OpenWith(context.Background(), url, postgres.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return url, st
}

// jobRows is every row of River's job table as text, every column, as someone reading
// the database would see it.
func jobRows(t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows string
	if err := conn.QueryRow(context.Background(), `SELECT COALESCE(string_agg(j::text, E'\n'), '') FROM river_job j`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// payloads counts the jobs that still hold a payload.
func payloads(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job WHERE args ?| array['input', 'payload', 'inputs', 'approvals']`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitDone(t *testing.T, done func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, err := done()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not end within 60s")
		}
		time.Sleep(20 * time.Millisecond) // polling the job's state, bounded by the deadline
	}
}

// Nothing in clear at rest (issue 46): with the store's keys, a clustered run's job
// holds its prompt sealed while it waits, the worker runs the prompt it sealed, and once
// the job has ended it keeps only its identifiers; River's table never holds the words.
// Before, the job's args held the messages in clear and kept them after the run.
func TestClusteredRunsKeepNoPromptInRiversTable(t *testing.T) {
	ctx := context.Background()
	const secret = "MARMOT-5521-LAUNCH"
	url, st := keyedStore(t)
	agent, err := loop.New(loop.Config{Name: "t", Model: looptest.NewModel(looptest.Turn{Text: "noted"}), ModelName: "fake", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	// The job is enqueued by a node without workers and read while it waits: a worker in
	// the same node could run it before the read (it did, in 0.6 s).
	q, err := New(ctx, Options{URL: url, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	in := loop.RunInput{SessionID: "s1", RunID: "r1", User: "ana", Messages: []loop.Message{loop.UserMessage("the launch code is " + secret)},
		State: json.RawMessage(`{"hint":"` + secret + `"}`)}
	if err := q.Submit(ctx, in); err != nil {
		t.Fatal(err)
	}
	if rows := jobRows(t, url); strings.Contains(rows, secret) || !strings.Contains(rows, seal.Prefix) {
		t.Fatalf("a queued job's row: want its input sealed:\n%s", rows)
	}
	c, err := New(ctx, Options{URL: url, Runner: agent, Store: st, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	waitDone(t, func() (bool, error) { return c.Done(ctx, "s1", "r1") })
	entries, err := st.Load(ctx, "s1")
	if err != nil || len(entries) == 0 {
		t.Fatalf("the run stored nothing: %v", err)
	}
	if !strings.Contains(userText(entries), secret) {
		t.Fatalf("the worker did not run the submitted prompt: %q", userText(entries))
	}
	if rows := jobRows(t, url); strings.Contains(rows, secret) || strings.Contains(rows, seal.Prefix) {
		t.Fatalf("an ended job keeps its payload:\n%s", rows)
	}
	if n := payloads(t, url); n != 0 {
		t.Fatalf("%d ended jobs keep a payload", n)
	}
	if err := c.Submit(ctx, in); err == nil {
		t.Fatal("the pruned job no longer keeps the run id: it was queued again")
	}
}

func userText(entries []loop.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.Message.Role == loop.RoleUser {
			b.WriteString(e.Message.Text())
		}
	}
	return b.String()
}

// A job that ends without a worker (aborted while queued) is pruned too: the trigger
// prunes in the update that ends the job, whoever makes it.
func TestAJobAbortedWhileQueuedKeepsNoPayload(t *testing.T) {
	ctx := context.Background()
	url, st := keyedStore(t)
	c, err := New(ctx, Options{URL: url, Store: st}) // no workers: the job stays queued
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Submit(ctx, loop.RunInput{SessionID: "s1", RunID: "r1", Messages: []loop.Message{loop.UserMessage("queued words")}}); err != nil {
		t.Fatal(err)
	}
	if n := payloads(t, url); n != 1 {
		t.Fatalf("a queued job: %d payloads, want 1", n)
	}
	if ok, err := c.Abort(ctx, "s1", "r1"); !ok || err != nil {
		t.Fatalf("abort: %v %v", ok, err)
	}
	if n := payloads(t, url); n != 0 {
		t.Fatalf("an aborted job keeps its payload")
	}
}

// recordingWorkflows is a WorkflowRunner that keeps the inputs each run was given: what
// the worker read out of the job.
type recordingWorkflows struct {
	mu  sync.Mutex
	got []workflow.RunInput
}

func (r *recordingWorkflows) RunWorkflow(_ context.Context, name string, in workflow.RunInput) (workflow.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, in)
	return workflow.Result{Record: &workflow.Record{Workflow: name, RunID: in.RunID, Status: workflow.RunCompleted}}, nil
}

// A workflow job's inputs and decisions are sealed too, reach the worker as they were
// submitted, and are dropped once the job has ended.
func TestWorkflowJobsKeepNoInputsInRiversTable(t *testing.T) {
	ctx := context.Background()
	const secret = "OSPREY-8830-INPUT"
	url, st := keyedStore(t)
	wf := &recordingWorkflows{}
	runner, err := loop.New(loop.Config{Name: "t", Model: looptest.NewModel(), ModelName: "fake", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, Options{URL: url, Runner: runner, Workflows: wf, Store: st, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	in := workflow.RunInput{RunID: "w1", Inputs: json.RawMessage(`{"code":"` + secret + `"}`),
		Approvals: map[string]workflow.Decision{"ok": {Approved: true, Comment: "because " + secret}}}
	if err := c.SubmitWorkflow(ctx, "deploy", in); err != nil {
		t.Fatal(err)
	}
	if rows := jobRows(t, url); strings.Contains(rows, secret) {
		t.Fatalf("a queued workflow job's row holds its inputs in clear:\n%s", rows)
	}
	waitDone(t, func() (bool, error) { return c.WorkflowDone(ctx, "deploy", "", "w1") })
	wf.mu.Lock()
	got := wf.got
	wf.mu.Unlock()
	if len(got) != 1 || string(got[0].Inputs) != string(in.Inputs) || got[0].Approvals["ok"] != in.Approvals["ok"] {
		t.Fatalf("the worker ran %+v, want %+v", got, in)
	}
	if rows := jobRows(t, url); strings.Contains(rows, secret) || strings.Contains(rows, seal.Prefix) {
		t.Fatalf("an ended workflow job keeps its payload:\n%s", rows)
	}
}

// Deleting a session (users erase, sessions delete, retention: the store's
// DeleteSession) deletes its jobs in the same transaction; a job running now makes the
// session busy.
func TestDeletingASessionDeletesItsJobs(t *testing.T) {
	ctx := context.Background()
	url, st := keyedStore(t)
	c, err := New(ctx, Options{URL: url, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range []string{"s1", "s2"} {
		if err := c.Submit(ctx, loop.RunInput{SessionID: s, RunID: "r1", Messages: []loop.Message{loop.UserMessage("words of " + s)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Sessions(ctx, "r1"); err != nil || len(got) != 1 || got[0] != "s2" {
		t.Fatalf("sessions with a job after deleting s1: %v %v", got, err)
	}
	rows := jobRows(t, url)
	if strings.Contains(rows, `"s1"`) || !strings.Contains(rows, `"s2"`) {
		t.Fatalf("after deleting s1:\n%s", rows)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE river_job SET state = 'running', attempted_at = now(), attempt = 1 WHERE args->>'session' = 's2'`); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(ctx, "s2"); !errors.Is(err, loop.ErrSessionBusy) {
		t.Fatalf("deleting a session whose job is running: %v, want ErrSessionBusy", err)
	}
}

// Someone who can write the database but has no key moves one session's sealed input
// into another session's queued job: it does not open there (the payload is bound to its
// job), the job is cancelled without running, and nothing reaches the other session.
func TestASealedInputMovedToAnotherJobDoesNotRun(t *testing.T) {
	ctx := context.Background()
	url, st := keyedStore(t)
	enqueue, err := New(ctx, Options{URL: url, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer enqueue.Close(ctx)
	for _, s := range []string{"victim", "attacker"} {
		if err := enqueue.Submit(ctx, loop.RunInput{SessionID: s, RunID: "r1", Messages: []loop.Message{loop.UserMessage("words of " + s)}}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE river_job SET args = jsonb_set(args, '{input}', (SELECT args->'input' FROM river_job WHERE args->>'session' = 'victim'))
		WHERE args->>'session' = 'attacker'`); err != nil {
		t.Fatal(err)
	}
	if _, err := enqueue.Abort(ctx, "victim", "r1"); err != nil {
		t.Fatal(err)
	}
	model := looptest.NewModel(looptest.Turn{Text: "noted"})
	agent, err := loop.New(loop.Config{Name: "t", Model: model, ModelName: "fake", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := New(ctx, Options{URL: url, Runner: agent, Store: st, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close(ctx)
	waitDone(t, func() (bool, error) { return worker.Done(ctx, "attacker", "r1") })
	var state string
	if err := conn.QueryRow(ctx, `SELECT state FROM river_job WHERE args->>'session' = 'attacker'`).Scan(&state); err != nil || state != "cancelled" {
		t.Fatalf("the job with a moved payload: %q %v, want cancelled", state, err)
	}
	if es, err := st.Load(ctx, "attacker"); err != nil || len(es) != 0 || len(model.Requests()) != 0 {
		t.Fatalf("the moved input ran: %d entries, %d model calls, %v", len(es), len(model.Requests()), err)
	}
}
