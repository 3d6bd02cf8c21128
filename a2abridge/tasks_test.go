package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

type callerKey struct{}

// ownedTasks is a store whose callers may reach the contexts named after them ("ana-1").
func ownedTasks(t *testing.T, tasks map[string]string) *Tasks {
	store := &Tasks{Allow: func(ctx context.Context, session string, _ bool) bool {
		who, _ := ctx.Value(callerKey{}).(string)
		return who != "" && strings.HasPrefix(session, SessionPrefix+who+"-")
	}}
	for id, contextID := range tasks {
		if _, err := store.Create(context.Background(), &a2a.Task{ID: a2a.TaskID(id), ContextID: contextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

func as(who string) context.Context { return context.WithValue(context.Background(), callerKey{}, who) }

// ListTasks (new in A2A 1.0) lists only the tasks Get would give the caller: bo's list
// holds none of ana's, and asking for ana's context by id gives bo nothing.
func TestA2ATasksListOnlyTheCallersTasks(t *testing.T) {
	store := ownedTasks(t, map[string]string{"t1": "ana-1", "t2": "bo-1", "t3": "ana-2", "t4": "bo-1"})
	ids := func(ctx context.Context, req a2a.ListTasksRequest) []string {
		res, err := store.List(ctx, &req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, task := range res.Tasks {
			out = append(out, string(task.ID))
		}
		slices.Sort(out)
		return append(out, fmt.Sprint(res.TotalSize))
	}
	for _, c := range []struct {
		who  string
		req  a2a.ListTasksRequest
		want []string
	}{
		{"ana", a2a.ListTasksRequest{}, []string{"t1", "t3", "2"}},
		{"bo", a2a.ListTasksRequest{}, []string{"t2", "t4", "2"}},
		{"bo", a2a.ListTasksRequest{ContextID: "ana-1"}, []string{"0"}},
		{"ana", a2a.ListTasksRequest{ContextID: "ana-1"}, []string{"t1", "1"}},
		{"", a2a.ListTasksRequest{}, []string{"0"}},
	} {
		if got := ids(as(c.who), c.req); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v: %v, want %v", c.who, c.req, got, c.want)
		}
	}
	if _, err := store.Get(as("bo"), "t1"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bo gets ana's task: %v", err)
	}
}

// Pages follow the latest update first and cover every task once.
func TestA2ATasksPages(t *testing.T) {
	store := ownedTasks(t, nil)
	for i := range 5 {
		if _, err := store.Create(context.Background(), &a2a.Task{ID: a2a.TaskID(fmt.Sprint("t", i)), ContextID: "ana-1"}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	req := &a2a.ListTasksRequest{PageSize: 2}
	for range 5 {
		res, err := store.List(as("ana"), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range res.Tasks {
			got = append(got, string(task.ID))
		}
		if res.NextPageToken == "" {
			break
		}
		req.PageToken = res.NextPageToken
	}
	if want := []string{"t4", "t3", "t2", "t1", "t0"}; !slices.Equal(got, want) {
		t.Fatalf("pages: %v, want %v", got, want)
	}
	for _, bad := range []*a2a.ListTasksRequest{{PageSize: 101}, {PageToken: "x"}} {
		if _, err := store.List(as("ana"), bad); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("List(%+v): %v", bad, err)
		}
	}
}

// A write based on an old version is refused, as the SDK expects to detect concurrent
// updates (a cancel during a run); a new task's id cannot be taken twice.
func TestA2ATasksVersions(t *testing.T) {
	store := ownedTasks(t, map[string]string{"t1": "ana-1"})
	st, err := store.Get(as("ana"), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(context.Background(), &taskstore.UpdateRequest{Task: st.Task, PrevVersion: st.Version}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(context.Background(), &taskstore.UpdateRequest{Task: st.Task, PrevVersion: st.Version}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("stale update: %v", err)
	}
	if _, err := store.Create(context.Background(), st.Task); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Errorf("second create: %v", err)
	}
	if n := store.ForgetSession(SessionPrefix + "ana-1"); n != 1 {
		t.Errorf("forgot %d tasks", n)
	}
	if _, err := store.Get(as("ana"), "t1"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("forgotten task: %v", err)
	}
}
