package a2abridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// Tasks is the A2A task store, kept in the process's memory as a2asrv's own is, with one
// difference: a task is reachable only by callers who may act on its session. Every
// method that names a task (GetTask, CancelTask, SubscribeToTask, a message to an
// existing task, the push-config methods; the same methods of A2A 0.3, which the SDK
// serves through the same handler) loads it through Get, and ListTasks lists through
// List, which keeps only the tasks Get would give, so the check is in one place; a task
// the caller may not reach answers exactly as one that does not exist
// (a2a.ErrTaskNotFound), naming nothing of it.
type Tasks struct {
	// Allow reports whether ctx's caller may read (write false) or act in (write true)
	// the session. Nil allows everything (a server without users).
	Allow func(ctx context.Context, session string, write bool) bool

	mu    sync.Mutex
	seq   int64 // the last version given
	tasks map[a2a.TaskID]*storedTask
}

// storedTask is a task as JSON (a deep copy in, a deep copy out) and its version, which
// is also its place in the order of updates (List gives the latest first).
type storedTask struct {
	json      []byte
	contextID string
	state     a2a.TaskState
	version   taskstore.TaskVersion
}

var _ taskstore.Store = (*Tasks)(nil)

// Create implements taskstore.Store.
func (t *Tasks) Create(_ context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	return t.put(task, nil)
}

// Update implements taskstore.Store: the SDK's own writes, on a task it loaded through Get.
func (t *Tasks) Update(_ context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	if req == nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("update task: %w", a2a.ErrInvalidParams)
	}
	return t.put(req.Task, &req.PrevVersion)
}

// put stores a task: a new one (prev nil), or a newer version of a stored one whose
// version is *prev (TaskVersionMissing: any).
func (t *Tasks) put(task *a2a.Task, prev *taskstore.TaskVersion) (taskstore.TaskVersion, error) {
	if task == nil || task.ID == "" || task.ContextID == "" {
		return taskstore.TaskVersionMissing, fmt.Errorf("save task: %w", a2a.ErrInvalidParams)
	}
	b, err := json.Marshal(task)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("save task: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.tasks[task.ID]
	switch {
	case prev == nil && ok:
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	case prev != nil && !ok:
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	case prev != nil && *prev != taskstore.TaskVersionMissing && old.version != *prev:
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	if t.tasks == nil {
		t.tasks = map[a2a.TaskID]*storedTask{}
	}
	t.seq++
	t.tasks[task.ID] = &storedTask{json: b, contextID: task.ContextID, state: task.Status.State, version: taskstore.TaskVersion(t.seq)}
	return taskstore.TaskVersion(t.seq), nil
}

// Get implements taskstore.Store.
func (t *Tasks) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	t.mu.Lock()
	st, ok := t.tasks[id]
	t.mu.Unlock()
	if !ok || !t.allowed(ctx, st.contextID, writes(ctx)) {
		return nil, a2a.ErrTaskNotFound
	}
	return st.load()
}

func (st *storedTask) load() (*taskstore.StoredTask, error) {
	var task a2a.Task
	if err := json.Unmarshal(st.json, &task); err != nil {
		return nil, fmt.Errorf("load task: %w", err)
	}
	return &taskstore.StoredTask{Task: &task, Version: st.version}, nil
}

func (t *Tasks) allowed(ctx context.Context, contextID string, write bool) bool {
	return t.Allow == nil || t.Allow(ctx, SessionPrefix+contextID, write)
}

// List implements taskstore.Store: the tasks the caller may read, the latest updated
// first, a page at a time (the page token is the version to continue below).
func (t *Tasks) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	if size == 0 {
		size = 50
	} else if size < 1 || size > 100 {
		return nil, fmt.Errorf("page size must be between 1 and 100, got %d: %w", size, a2a.ErrInvalidParams)
	}
	below := int64(-1)
	if req.PageToken != "" {
		v, err := strconv.ParseInt(req.PageToken, 10, 64)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("page token %q: %w", req.PageToken, a2a.ErrInvalidParams)
		}
		below = v
	}
	t.mu.Lock()
	var match []*storedTask
	for _, st := range t.tasks {
		if (req.ContextID == "" || st.contextID == req.ContextID) && (req.Status == "" || st.state == req.Status) {
			match = append(match, st)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(match, func(a, b *storedTask) int { return int(b.version - a.version) })
	match = slices.DeleteFunc(match, func(st *storedTask) bool { return !t.allowed(ctx, st.contextID, false) })
	out := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: len(match), PageSize: size}
	for i, st := range match {
		if below >= 0 && int64(st.version) >= below {
			continue
		}
		if len(out.Tasks) == size {
			out.NextPageToken = strconv.FormatInt(int64(match[i-1].version), 10)
			break
		}
		loaded, err := st.load()
		if err != nil {
			return nil, err
		}
		trim(loaded.Task, req)
		out.Tasks = append(out.Tasks, loaded.Task)
	}
	return out, nil
}

// trim keeps what a ListTasks request asks of a task: its last HistoryLength messages (all
// when unset), its artifacts only when asked.
func trim(task *a2a.Task, req *a2a.ListTasksRequest) {
	if n := req.HistoryLength; n != nil && *n >= 0 && len(task.History) > *n {
		task.History = task.History[len(task.History)-*n:]
	}
	if !req.IncludeArtifacts {
		task.Artifacts = nil
	}
}

// writes reports whether the call that loads a task acts on it (cancel, a new message)
// rather than reads it.
func writes(ctx context.Context) bool {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok {
		return true
	}
	switch cc.Method() {
	case "GetTask", "ListTasks", "SubscribeToTask", "GetTaskPushConfig", "ListTaskPushConfigs":
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
	for id, st := range t.tasks {
		if st.contextID == ctxID {
			delete(t.tasks, id)
			n++
		}
	}
	return n
}
