package cluster

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// Nodes that start together on a new database migrate River's tables once, without
// racing each other; each can then enqueue.
func TestNodesStartingTogetherMigrateOnce(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	nodes := make([]*Cluster, 4)
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = New(context.Background(), Options{URL: url})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		defer nodes[i].Close(context.Background())
	}
	if _, err := nodes[0].Abort(context.Background(), "s1", "no-such-run"); err != nil {
		t.Fatal(err)
	}
	if done, err := nodes[1].Done(context.Background(), "s1", "no-such-run"); err != nil || !done {
		t.Fatalf("a run without a job is done: %v %v", done, err)
	}
}

// Run ids are unique per session (ARCHITECTURE.md): Submit queues a (session, run id)
// once, whichever node submits it, and refuses it again with loop.ErrRunExists, also
// once the job has ended; the same run id on another session is a different run.
func TestRunIDsUniquePerSession_SubmitQueuesEachOnce(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	a, err := New(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := New(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	in := loop.RunInput{SessionID: "s1", RunID: "r1"}
	if err := a.Submit(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx, in); !errors.Is(err, loop.ErrRunExists) {
		t.Fatalf("the same run on another node: %v, want ErrRunExists", err)
	}
	if ok, err := a.Abort(ctx, "s1", "r1"); !ok || err != nil {
		t.Fatalf("abort: %v %v", ok, err)
	}
	if err := a.Submit(ctx, in); !errors.Is(err, loop.ErrRunExists) {
		t.Fatalf("the same run after its job ended: %v, want ErrRunExists", err)
	}
	if err := b.Submit(ctx, loop.RunInput{SessionID: "s2", RunID: "r1"}); err != nil {
		t.Fatalf("r1 on another session: %v", err)
	}
}

// Run ids are unique only per session, so jobs are keyed by (session, run id): with the
// same run id queued on two sessions, aborting one session's run cancels that job only,
// and the other session's run is still to do.
func TestAbortAndDoneKeyBySessionAndRunID(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	c, err := New(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range []string{"s1", "s2"} {
		if err := c.Submit(ctx, loop.RunInput{SessionID: s, RunID: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.Sessions(ctx, "r1"); err != nil || !slices.Equal(got, []string{"s1", "s2"}) {
		t.Fatalf("sessions of r1: %v %v", got, err)
	}
	if ok, err := c.Abort(ctx, "s1", "r1"); !ok || err != nil {
		t.Fatalf("abort s1/r1: %v %v", ok, err)
	}
	if done, err := c.Done(ctx, "s1", "r1"); !done || err != nil {
		t.Fatalf("s1/r1 done: %v %v, want its job cancelled", done, err)
	}
	if done, err := c.Done(ctx, "s2", "r1"); done || err != nil {
		t.Fatalf("s2/r1 done: %v %v, want its job still queued", done, err)
	}
	if got, err := c.Sessions(ctx, "r1"); err != nil || !slices.Equal(got, []string{"s2"}) {
		t.Fatalf("sessions of r1 after the abort: %v %v", got, err)
	}
}
