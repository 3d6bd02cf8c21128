package cluster

import (
	"context"
	"os"
	"sync"
	"testing"

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
	if _, err := nodes[0].Abort(context.Background(), "no-such-run"); err != nil {
		t.Fatal(err)
	}
	if done, err := nodes[1].Done(context.Background(), "no-such-run"); err != nil || !done {
		t.Fatalf("a run without a job is done: %v %v", done, err)
	}
}
