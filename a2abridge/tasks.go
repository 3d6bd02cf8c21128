package a2abridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// Tasks is the A2A task store, kept in the process's memory as a2asrv's own is, with one
// difference: a task is reachable only by callers who may act on its session. Every
// method that names a task (tasks/get, tasks/cancel, tasks/resubscribe, a message to an
// existing task, the push-config methods) loads it through Get, so the check is in one
// place; a task the caller may not reach answers exactly as one that does not exist
// (a2a.ErrTaskNotFound), naming nothing of it.
type Tasks struct {
	// Allow reports whether ctx's caller may read (write false) or act in (write true)
	// the session. Nil allows everything (a server without users).
	Allow func(ctx context.Context, session string, write bool) bool

	mu    sync.Mutex
	tasks map[a2a.TaskID][]byte // JSON: a deep copy in, a deep copy out
}

var _ a2asrv.TaskStore = (*Tasks)(nil)

// Save implements a2asrv.TaskStore.
func (t *Tasks) Save(_ context.Context, task *a2a.Task) error {
	if task == nil || task.ID == "" {
		return fmt.Errorf("save task: %w", a2a.ErrInvalidParams)
	}
	b, err := json.Marshal(task)
	if err != nil {
		return fmt.Errorf("save task: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks = map[a2a.TaskID][]byte{}
	}
	t.tasks[task.ID] = b
	return nil
}

// Get implements a2asrv.TaskStore.
func (t *Tasks) Get(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	t.mu.Lock()
	b, ok := t.tasks[id]
	t.mu.Unlock()
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	var task a2a.Task
	if err := json.Unmarshal(b, &task); err != nil {
		return nil, fmt.Errorf("load task: %w", err)
	}
	if t.Allow != nil && !t.Allow(ctx, SessionPrefix+task.ContextID, writes(ctx)) {
		return nil, a2a.ErrTaskNotFound
	}
	return &task, nil
}

// writes reports whether the call that loads a task acts on it (cancel, a new message)
// rather than reads it.
func writes(ctx context.Context) bool {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok {
		return true
	}
	switch cc.Method() {
	case "OnGetTask", "OnResubscribeToTask", "OnGetTaskPushConfig", "OnListTaskPushConfig":
		return false
	}
	return true
}

// ForgetSession drops the tasks of the A2A context whose session is session (one
// SessionPrefix names); any other session has none. Deleting a session calls it, so
// erasure reaches what the process keeps of its tasks. It reports how many it dropped.
func (t *Tasks) ForgetSession(session string) int {
	ctxID, ok := strings.CutPrefix(session, SessionPrefix)
	if !ok {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, b := range t.tasks {
		var task struct {
			ContextID string `json:"contextId"`
		}
		if json.Unmarshal(b, &task) == nil && task.ContextID == ctxID {
			delete(t.tasks, id)
			n++
		}
	}
	return n
}
