package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// The probe plugin (testdata/probe, built with the Go SDK) shows what a Wasm tool
// keeps between calls and what reaches it.

var probe struct {
	once sync.Once
	path string
	err  error
}

// probePlugin is the [[plugins]] table of the probe with extra plugin keys and
// [plugins.permissions] lines.
func probePlugin(t *testing.T, keys, permissions string) string {
	t.Helper()
	probe.once.Do(func() {
		probe.path = filepath.Join(filepath.Dir(wasmCache), "probe.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", probe.path, "./testdata/probe")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			probe.err = fmt.Errorf("build testdata/probe: %v\n%s", err, out)
		}
	})
	if probe.err != nil {
		t.Fatal(probe.err)
	}
	return fmt.Sprintf("[[plugins]]\nname = \"probe\"\nwasm = %q\n%s\n[plugins.permissions]\n%s\n", probe.path, keys, permissions)
}

// counterFixture: per session, one run calling counter twice and answering both counts.
const counterFixture = `{"per_session": true, "turns": [
  {"tool_calls": [{"id": "c1", "name": "counter", "arguments": "{}"}]},
  {"tool_calls": [{"id": "c2", "name": "counter", "arguments": "{}"}]},
  {"text": "{{result c1}} {{result c2}}"}]}`

func TestPluginIsolationSessionIsTheDefault(t *testing.T) {
	h := openHost(t, counterFixture, probePlugin(t, "", ""), Options{})
	// The second session does not see the first one's global.
	for _, s := range []string{"s1", "s2"} {
		if res, _ := runHost(t, h, s, "count"); res.Final.Text() != "1 2" {
			t.Fatalf("session %s: final %q, want 1 2", s, res.Final.Text())
		}
	}
}

func TestPluginIsolationPooledSharesAcrossSessions(t *testing.T) {
	h := openHost(t, counterFixture, probePlugin(t, "pool_size = 1", `isolation = "pooled"`), Options{})
	runHost(t, h, "s1", "count")
	if res, _ := runHost(t, h, "s2", "count"); res.Final.Text() != "3 4" {
		t.Fatalf("final %q, want 3 4 (one instance for both sessions)", res.Final.Text())
	}
}

func TestPluginIsolationCallIsFresh(t *testing.T) {
	h := openHost(t, counterFixture, probePlugin(t, "", `isolation = "call"`), Options{})
	if res, _ := runHost(t, h, "s1", "count"); res.Final.Text() != "1 1" {
		t.Fatalf("final %q, want 1 1", res.Final.Text())
	}
}

// probeTool is the probe's tool name as the loop sees it, called directly.
func probeTool(t *testing.T, h *Host, name string) loop.Tool {
	t.Helper()
	for _, tool := range h.tools {
		if tool.Spec().Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func TestPluginReceivesRawArgumentsThatAreNotJSON(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "echo_args", "arguments": "{\"q\":\"abc"}, {"id": "c2", "name": "echo_args", "arguments": "{\"q\":1}"}]},
	  {"text": "{{result c1}} {{result c2}}"}]}`, probePlugin(t, "", ""), Options{})
	res, _ := runHost(t, h, "s", "echo")
	if want := `{"_raw":"{\"q\":\"abc"} {"q":1}`; res.Final.Text() != want {
		t.Fatalf("final %q, want %q", res.Final.Text(), want)
	}
}

func TestPluginFinalResultEndsTheRun(t *testing.T) {
	// The second turn is never asked for: the finish result ends the run.
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "finish", "arguments": "{}"}]},
	  {"text": "the model was asked again"}]}`, probePlugin(t, "", ""), Options{})
	res, _ := runHost(t, h, "s", "finish")
	if res.Status != loop.StatusCompleted || res.Reason != loop.ReasonDoneTool || res.Final.Text() != "all done" {
		t.Fatalf("run ended %s/%s with %q", res.Status, res.Reason, res.Final.Text())
	}
	// What the loop receives from the plugin: Done, Final and the structured output.
	got, err := probeTool(t, h, "finish").Call(context.Background(), loop.ToolCall{ID: "x", Name: "finish", Arguments: "{}"})
	if err != nil || !got.Done || got.Final != "all done" || string(got.Structured) != `{"answer":42}` || got.IsError {
		t.Fatalf("got %+v %v", got, err)
	}
	// Structured content alone is the tool message's text, and it is carried as such.
	got, err = probeTool(t, h, "measure").Call(context.Background(), loop.ToolCall{ID: "m", Name: "measure", Arguments: "{}"})
	if err != nil || got.Done || got.Text() != `{"cm":180}` || string(got.Structured) != `{"cm":180}` {
		t.Fatalf("structured only: %+v %v", got, err)
	}
	// A plain result does not end anything.
	got, err = probeTool(t, h, "counter").Call(context.Background(), loop.ToolCall{ID: "y", Name: "counter", Arguments: "{}"})
	if err != nil || got.Done || got.Final != "" {
		t.Fatalf("got %+v %v", got, err)
	}
}

func TestPluginToolReadsTheCallIDAndSessionItServes(t *testing.T) {
	// Each call gets its own id, the one the model gave and the session stores: what a
	// tool with side effects keys them by, since a resumed run calls it again with it.
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "call-17", "name": "whoami", "arguments": "{}"}, {"id": "call-18", "name": "whoami", "arguments": "{}"}]},
	  {"text": "{{result call-17}} / {{result call-18}}"}]}`, probePlugin(t, "", ""), Options{})
	res, _ := runHost(t, h, "s1", "who")
	if want := "call-17 s1 / call-18 s1"; res.Final.Text() != want {
		t.Fatalf("final %q, want %q", res.Final.Text(), want)
	}
}
