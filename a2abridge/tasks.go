package a2abridge

import (
	"bytes"
	"context"
	"encoding/gob"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// TaskStore is the A2A server's task store: a2asrv's own default keeps every task (its
// messages and answers) in the process for as long as it runs, and nothing outside the
// SDK could reach it. This one keeps them the same way (deep copies, in memory) and
// forgets a session's tasks when the session is deleted (ForgetSession), so erasure
// reaches them (issue 46).
type TaskStore struct {
	mu    sync.RWMutex
	tasks map[a2a.TaskID]*a2a.Task
}

var _ a2asrv.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns an empty store.
func NewTaskStore() *TaskStore { return &TaskStore{tasks: map[a2a.TaskID]*a2a.Task{}} }

// Save implements a2asrv.TaskStore.
func (s *TaskStore) Save(_ context.Context, task *a2a.Task) error {
	c, err := deepCopy(task)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.tasks[task.ID] = c
	s.mu.Unlock()
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *TaskStore) Get(_ context.Context, id a2a.TaskID) (*a2a.Task, error) {
	s.mu.RLock()
	t, ok := s.tasks[id]
	s.mu.RUnlock()
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	return deepCopy(t)
}

// ForgetSession drops the tasks of the A2A context whose session is session (one
// SessionPrefix names); any other session has none. It reports how many it dropped.
func (s *TaskStore) ForgetSession(session string) int {
	ctxID, ok := strings.CutPrefix(session, SessionPrefix)
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, t := range s.tasks {
		if t.ContextID == ctxID {
			delete(s.tasks, id)
			n++
		}
	}
	return n
}

// deepCopy copies a task as a2asrv's own store does (gob), so that no caller shares
// what the store keeps.
func deepCopy(t *a2a.Task) (*a2a.Task, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(t); err != nil {
		return nil, err
	}
	var c a2a.Task
	if err := gob.NewDecoder(&buf).Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}
