package host

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Reload is safe during runs: runs started through the door while the plugin file is
// rebuilt and reloaded again and again each end, none failed, on one plugin set (the generation
// they started on: the agent and the plugins it was built from, which their memory
// extraction uses too), readers of the plugin list (Plugins, PluginInfo) race with
// nothing (run with -race), and once no run is left the replaced plugins are all closed.
func TestReloadDuringRunsGivesEachRunOneConsistentPluginSet(t *testing.T) {
	probePlugin(t, "", "") // builds probe.wasm
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	h := openHost(t, `{"per_session": false, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"text": "done"}]}`, "[[plugins]]\nname = \"p\"\nwasm = "+`"`+wasm+`"`+"\n", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const runners, runs, reloads = 4, 6, 6
	var wg sync.WaitGroup
	errs := make(chan error, runners*runs+1)
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range runs {
				res, err := h.Runner().RunWith(ctx, loop.RunInput{SessionID: fmt.Sprintf("s%d-%d", i, j),
					User: "ana", Messages: []loop.Message{loop.UserMessage("go")}}, nil)
				// One turn sequence for every session (per_session false): a run may be
				// handed the tool call twice and stop on it (incomplete); none may fail.
				if err != nil || res.Status == loop.StatusFailed || res.Status == loop.StatusAborted {
					errs <- fmt.Errorf("run s%d-%d: %s/%s %v", i, j, res.Status, res.Reason, err)
				}
				_ = h.Plugins()
				_ = h.PluginInfo()
			}
		}()
	}
	// Reload on, at least `reloads` times and for as long as runs are going.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for k := 0; ; k++ {
		select {
		case <-finished:
		default:
			reload(t, h, wasm, k)
			continue
		}
		if k >= reloads {
			break
		}
		reload(t, h, wasm, k)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// No run is left: the next reload closes every replaced plugin.
	copyFile(t, probe.path, wasm, time.Now().Add(time.Hour))
	if _, err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h.live.mu.Lock()
	defer h.live.mu.Unlock()
	if n := len(h.live.retired); n != 0 {
		t.Fatalf("%d retired generations still held with no run left", n)
	}
}

// reload swaps the plugin file between the probe and calc (a new mtime each time) and
// reloads it.
func reload(t *testing.T, h *Host, wasm string, k int) {
	t.Helper()
	src := probe.path
	if k%2 == 1 {
		src = calcWasm
	}
	copyFile(t, src, wasm, time.Now().Add(time.Duration(k)*time.Second))
	if names, err := h.Reload(context.Background()); err != nil || len(names) != 1 {
		t.Fatalf("reload %d: %v %v", k, names, err)
	}
}

// reloadingApprover approves every call, and before the first answer reloads the host
// with the plugin file replaced: a reload that lands in the middle of a run.
type reloadingApprover struct {
	once   sync.Once
	reload func()
}

func (a *reloadingApprover) Approve(context.Context, loop.ToolCall) (loop.Approval, error) {
	a.once.Do(a.reload)
	return loop.Approval{Approved: true}, nil
}

// A run that a reload lands in finishes on the plugin set it started with: the reload
// replaces calc with a plugin that has no calc while the run waits on its first call's
// approval, and both of the run's calls are still answered by calc (the run holds its
// generation); the next run is on the new set, and the old one is closed once no run
// holds it. Before generations, the run's second call met the replaced plugin closed.
func TestReloadInTheMiddleOfARunLeavesTheRunOnThePluginSetItStartedWith(t *testing.T) {
	probePlugin(t, "", "") // builds probe.wasm
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	copyFile(t, calcWasm, wasm, time.Now().Add(-time.Hour))
	appr := &reloadingApprover{}
	h := openHostWith(t, "[agent.tool_policy]\nrequire_approval = [\"calc\"]", `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"text": "{{result c1}} and {{result c2}}"},
	  {"tool_calls": [{"id": "c3", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"text": "then {{result c3}}"}]}`,
		"[[plugins]]\nname = \"p\"\nwasm = "+`"`+wasm+`"`+"\n", Options{Approver: appr})
	appr.reload = func() {
		copyFile(t, probe.path, wasm, time.Now())
		if names, err := h.Reload(context.Background()); err != nil || len(names) != 1 {
			t.Errorf("reload mid-run: %v %v", names, err)
		}
		h.live.mu.Lock()
		held := len(h.live.retired)
		h.live.mu.Unlock()
		if held != 1 {
			t.Errorf("the running run's generation is not held: %d retired", held)
		}
	}
	run := func(session string) string {
		t.Helper()
		res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage("go")}}, nil)
		if err != nil {
			t.Fatalf("run %s: %v", session, err)
		}
		return res.Final.Text()
	}
	if got := run("during"); got != "42 and 2" {
		t.Fatalf("the run the reload landed in answered %q, want both calls by calc", got)
	}
	if got := run("after"); got != "then Error: Unknown tool 'calc'" {
		t.Fatalf("the next run answered %q, want the new plugin set (no calc)", got)
	}
	// The last run on the retired set has ended: its plugins are closed without
	// waiting for another reload.
	deadline := time.Now().Add(time.Minute)
	for {
		h.live.mu.Lock()
		n := len(h.live.retired)
		h.live.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d retired generations still held a minute after their last run", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
