package a2abridge

import (
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agenthost/agenthost/loop"
)

// A run the host's admission refused (issue 47) fails the task with the refusal's text
// and the seconds to wait in its metadata, A2A's form of a 429's Retry-After; any other
// failure carries none.
func TestOverloadedRunFailsTheTaskWithRetryAfter(t *testing.T) {
	rc := &a2asrv.ExecutorContext{TaskID: "t1", ContextID: "c1"}
	err := &loop.OverloadError{Reason: "the host's 8 runs in flight and queue of 16 are full (max_runs, queue)", RetryAfter: 2500 * time.Millisecond}
	ev, ok := outcome(rc, loop.RunResult{RunID: "r1", Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err, nil).(*a2a.TaskStatusUpdateEvent)
	if !ok || ev.Status.State != a2a.TaskStateFailed {
		t.Fatalf("got %#v, want a failed status", ev)
	}
	if got := ev.Status.Message.Metadata[metaRetryAfter]; got != 3 {
		t.Fatalf("%s = %v, want 3 (seconds, rounded up)", metaRetryAfter, got)
	}
	if text := textOf(ev.Status.Message); !strings.Contains(text, "overloaded: the host's 8 runs") {
		t.Fatalf("task message %q", text)
	}
	other, _ := outcome(rc, loop.RunResult{RunID: "r2", Status: loop.StatusFailed, Reason: loop.ReasonError}, nil, nil).(*a2a.TaskStatusUpdateEvent)
	if _, has := other.Status.Message.Metadata[metaRetryAfter]; has {
		t.Fatal("a failure that is no refusal carries a Retry-After")
	}
}
