package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// Wasm hooks change a scripted run in ways the fixture's expect (what the model
// receives) or the run's result proves. The plugins are the examples of plugins/examples.

func example(t *testing.T, name string) string {
	t.Helper()
	root, _ := filepath.Abs("..")
	p := filepath.Join(root, "plugins/examples/go", name, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", name)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, b)
		}
	}
	return p
}

func hookPlugin(t *testing.T, name, kind, permissions string) string {
	return fmt.Sprintf("[[plugins]]\nname = %q\nkind = %q\nwasm = %q\n[plugins.permissions]\n%s\n", name, kind, example(t, name), permissions)
}

func runHost(t *testing.T, h *Host, session, prompt string) (loop.RunResult, []loop.Event) {
	t.Helper()
	var evs []loop.Event
	res, _ := h.Agent.RunWith(context.Background(), loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage(prompt)}},
		func(e loop.Event) { evs = append(evs, e) })
	if res.Err != nil {
		t.Fatalf("run: %v", res.Err)
	}
	return res, evs
}

func TestHookSlidingWindowShortensWhatTheModelReceives(t *testing.T) {
	// Without the window the third call would carry 5 messages; with keep = 2 it carries
	// the last call and its result only.
	h := openHost(t, `{"turns": [
	  {"expect": {"messages": 1}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"expect": {"messages": 2, "last_role": "tool"}, "tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"expect": {"messages": 2, "last_role": "tool"}, "text": "{{result c2}}"}]}`,
		calcPlugin("calc")+hookPlugin(t, "sliding_window", "context", `config = { keep = "2" }`), Options{})
	res, _ := runHost(t, h, "s", "add")
	if res.Final.Text() != "4" {
		t.Fatalf("final %q", res.Final.Text())
	}
}

func TestHookSummarizeCompactsThroughTheHostModel(t *testing.T) {
	// After two tool rounds the history has 5 messages > max_messages 3: the plugin asks
	// the host model (create_message, turn 3) for a summary, and the model call that
	// follows receives the summary and the last round only.
	h := openHost(t, `{"per_session": false, "turns": [
	  {"expect": {"messages": 1}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"expect": {"messages": 3}, "tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"expect": {"tools_offered": false, "contains": "Summarise this conversation"}, "text": "The user asked for sums; 1+1 = 2."},
	  {"expect": {"messages": 3, "contains": "Summary of the earlier conversation:\nThe user asked for sums; 1+1 = 2."}, "text": "{{result c2}}"}]}`,
		calcPlugin("calc")+hookPlugin(t, "summarize", "context", `model = true`+"\n"+`config = { max_messages = "3", keep = "2" }`), Options{})
	res, evs := runHost(t, h, "s", "add")
	if res.Final.Text() != "4" {
		t.Fatalf("final %q", res.Final.Text())
	}
	var cu []loop.ContextUpdateData
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ContextUpdateData); ok {
			cu = append(cu, *d)
		}
	}
	if len(cu) != 1 || cu[0].Compacted != 3 || cu[0].Overflow {
		t.Fatalf("context updates %+v", cu)
	}
	entries, _ := h.Store.Load(context.Background(), "s")
	var compactions int
	for _, e := range entries {
		if e.Kind == loop.EntryCompaction {
			compactions++
			if e.Compaction.Replace != 3 || !strings.HasPrefix(e.Compaction.Summary[0].Text(), "Summary of the earlier conversation:") {
				t.Fatalf("stored compaction %+v", e.Compaction)
			}
		}
	}
	if compactions != 1 {
		t.Fatalf("%d stored compactions, want 1", compactions)
	}
}

func TestHookTodosForcesOneMoreTurn(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"text": "Plan:\n- [x] read the file\n- [ ] write the summary"},
	  {"expect": {"last_role": "user", "contains": "You still have unfinished todos:\n- [ ] write the summary"}, "text": "- [x] write the summary\nAll done."}]}`,
		hookPlugin(t, "todos", "termination", ""), Options{})
	res, evs := runHost(t, h, "s", "do the work")
	if res.Final.Text() != "- [x] write the summary\nAll done." || res.Status != loop.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	var hooks []string
	for _, e := range evs {
		if d, ok := e.Data.(*loop.HookData); ok {
			hooks = append(hooks, fmt.Sprintf("%s %s %s: %s", d.Name, d.Point, d.Verdict, d.Reason))
		}
	}
	if strings.Join(hooks, "|") != "todos before_final continue: 1 unfinished todos" {
		t.Fatalf("hook events %q", hooks)
	}
}

func TestHookBudgetGuardStopsTheRun(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]}]}`,
		calcPlugin("calc")+hookPlugin(t, "budget_guard", "termination", `config = { max_turns = "2" }`), Options{})
	res, _ := runHost(t, h, "s", "go")
	// The guard's stop carries its own final text, so no summary call is made (the
	// fixture has no third turn) and c2 is not executed.
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonHookStop ||
		res.Final.Text() != "Stopped before finishing: turn budget of 2 turns spent." {
		t.Fatalf("result %+v, final %q", res, res.Final.Text())
	}
	entries, _ := h.Store.Load(context.Background(), "s")
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.Message.ToolCallID == "c2" && !strings.Contains(e.Message.Text(), "not executed") {
			t.Fatalf("c2 ran: %q", e.Message.Text())
		}
	}
}

func TestHookRedactGuardrailCleansToolResultsAndOutput(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "regex_extract", "arguments": "{\"text\":\"write to bob@example.com today\",\"pattern\":\"\\\\S+@\\\\S+\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "Found {{result c1}}; or call +1 415 555 0100."}]}`,
		fmt.Sprintf("[[plugins]]\nname = \"text\"\nwasm = %q\n", example(t, "text"))+hookPlugin(t, "redact", "guardrail", ""), Options{})
	res, evs := runHost(t, h, "s", "find the address")
	if res.Final.Text() != `Found ["[redacted email]"]; or call [redacted phone].` {
		t.Fatalf("final %q", res.Final.Text())
	}
	var tr []string
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ToolResultData); ok {
			tr = append(tr, d.Content)
		}
	}
	if len(tr) != 1 || tr[0] != `["[redacted email]"]` {
		t.Fatalf("tool results %q", tr)
	}
}
