package host

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// recordingApprover approves every call it is asked about and remembers which.
type recordingApprover struct {
	mu    sync.Mutex
	asked []string
}

func (a *recordingApprover) Approve(_ context.Context, c loop.ToolCall) (loop.Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, c.ID)
	return loop.Approval{Approved: true}, nil
}

// permissionFixture: four calls of echo_args, one per decision the permit export can
// give, then an answer quoting each result.
const permissionFixture = `{"turns": [
  {"tool_calls": [
    {"id": "c1", "name": "echo_args", "arguments": "{\"fine\":true}"},
    {"id": "c2", "name": "echo_args", "arguments": "{\"deny\":true}"},
    {"id": "c3", "name": "echo_args", "arguments": "{\"ask\":true}"},
    {"id": "c4", "name": "echo_args", "arguments": "{\"fail\":true}"}]},
  {"text": "1={{result c1}} 2={{result c2}} 3={{result c3}} 4={{result c4}}"}]}`

// A Wasm plugin of kind "permission" decides each tool call (L6): allow runs it, deny
// answers the model with the plugin's reason and the run goes on, ask routes it to the
// Approver, and a plugin that fails denies (fail closed).
func TestPermissionPluginAllowsDeniesAsksAndFailsClosed(t *testing.T) {
	ap := &recordingApprover{}
	plugins := probePlugin(t, "", "") + probePlugin(t, `kind = "permission"`, "")
	plugins = strings.Replace(plugins, `name = "probe"`, `name = "gate"`, 2)
	plugins = strings.Replace(plugins, `name = "gate"`, `name = "probe"`, 1) // the tool keeps its name
	h := openHost(t, permissionFixture, plugins, Options{Approver: ap})
	res, evs := runHost(t, h, "s-perm", "go")
	if res.Status != loop.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	want := `1={"fine":true} 2=Error: permission denied for tool 'echo_args': echo_args may not run in s-perm 3={"ask":true} ` +
		`4=Error: permission denied for tool 'echo_args': permission plugin "gate" failed: plugin "gate": permit: permit: cannot decide c4`
	if got := res.Final.Text(); got != want {
		t.Fatalf("final:\n%s\nwant:\n%s", got, want)
	}
	if strings.Join(ap.asked, ",") != "c3" {
		t.Fatalf("approver asked about %v, want only c3", ap.asked)
	}
	var errs []string
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ToolResultData); ok && d.IsError {
			errs = append(errs, d.ID)
		}
	}
	if strings.Join(errs, ",") != "c2,c4" {
		t.Fatalf("error results %v, want c2,c4", errs)
	}
}
