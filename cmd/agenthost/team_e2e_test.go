package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// teamEnv writes a manifest with a triage agent ([agent]) and the [agents.NAME] tables
// given, each agent on a scripted provider of its own (scripts: agent name → fixture).
func teamEnv(t *testing.T, agents string, scripts map[string]string) *agentEnv {
	t.Helper()
	dir := t.TempDir()
	var providers strings.Builder
	for name, fixture := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(fixture), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&providers, "[providers.%s]\ncommand = %q\noptions = { script = %q }\n\n", name,
			filepath.Join(binDir, "agenthost-provider-scripted"), name+".json")
	}
	manifest := fmt.Sprintf(`[agent]
name = "triage"
system_prompt = "You route questions."
provider = "triage"
model = "demo"
tools = []
%s

%s
[store]
kind = "sqlite"
path = "sessions.db"

[[plugins]]
name = "calc"
wasm = %q
`, agents, providers.String(), calcWasm)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return &agentEnv{dir: dir, manifest: p}
}

// runJSON runs the prompt with --json and returns the exit code and the events.
func (e *agentEnv) runJSON(t *testing.T, args ...string) (int, []loop.Event, string) {
	t.Helper()
	r := e.agenthost(t, append([]string{"run", "--json"}, args...)...)
	return r.code, events(t, r.stdout), r.stderr
}

func actors(evs []loop.Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *loop.ToolCallData:
			out = append(out, e.Agent+":"+d.Name)
		case *loop.HandoffData:
			out = append(out, fmt.Sprintf("handoff %s→%s depth %d (%s)", d.From, d.To, d.Depth, d.Reason))
		case *loop.RunFinishedData:
			out = append(out, fmt.Sprintf("%s:%s/%s", e.Agent, d.Status, d.Reason))
		}
	}
	return out
}

// replaysTheSame checks that `sessions show --json` prints the run's events, deltas
// aside.
func replaysTheSame(t *testing.T, e *agentEnv, evs []loop.Event) {
	t.Helper()
	show := e.agenthost(t, "sessions", "show", sessionOf(t, evs), "--json")
	if show.code != 0 {
		t.Fatalf("sessions show: %d %s", show.code, show.stderr)
	}
	var live []string
	for _, ev := range evs {
		if ev.Type != loop.EventModelDelta {
			b, _ := json.Marshal(ev)
			live = append(live, string(b))
		}
	}
	var stored []string
	for _, ev := range events(t, show.stdout) {
		b, _ := json.Marshal(ev)
		stored = append(stored, string(b))
	}
	equalStrings(t, "stored events", stored, live)
}

// A triage agent hands off to a specialist, which answers with its own prompt and
// tools; every event names the acting agent; the session replays the same events.
func TestE2E_TriageHandsOffToASpecialist(t *testing.T) {
	e := teamEnv(t, `handoffs = ["billing"]

[agents.billing]
system_prompt = "You do billing."
provider = "billing"
description = "Refunds."
tools = ["calc"]`, map[string]string{
		"triage": `{"turns": [{"expect": {"system": "You route questions.", "tools": ["transfer_to_billing"]},
			"tool_calls": [{"id": "h1", "name": "transfer_to_billing", "arguments": "{\"reason\":\"a refund\"}"}]}]}`,
		"billing": `{"turns": [
			{"expect": {"system": "You do billing.", "tools": ["calc"], "last_role": "tool"},
			 "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"40+2\"}"}]},
			{"expect": {"last_role": "tool"}, "text": "Refunded {{result c1}}."}]}`,
	})
	code, evs, stderr := e.runJSON(t, "refund my order")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	equalStrings(t, "actors", actors(evs), []string{
		"triage:transfer_to_billing", "handoff triage→billing depth 1 (a refund)", "billing:calc", "billing:completed/end_turn"})
	fin := evs[len(evs)-1].Data.(*loop.RunFinishedData)
	if m := fin.Metrics; m.Handoffs != 1 || m.ToolCalls != 2 || m.ModelCalls != 3 {
		t.Fatalf("metrics %+v", fin.Metrics)
	}
	replaysTheSame(t, e, evs)
	show := e.agenthost(t, "sessions", "show", sessionOf(t, evs))
	for _, want := range []string{"-- handoff triage → billing: a refund", "3 model calls, 2 tool calls (0 errors), 2 steps, 0 replans, 1 handoff,"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show.stdout)
		}
	}
}

// A transfer back to an agent already on the chain is refused; past max_handoffs the run
// ends incomplete/max_handoffs.
func TestE2E_HandoffCycleRefusedAndDepthExceeded(t *testing.T) {
	e := teamEnv(t, `handoffs = ["billing"]
max_handoffs = 2

[agents.billing]
provider = "billing"
handoffs = ["triage", "refunds"]

[agents.refunds]
provider = "refunds"
handoffs = ["billing"]`, map[string]string{
		"triage": `{"turns": [{"tool_calls": [{"id": "h1", "name": "transfer_to_billing", "arguments": "{}"}]}]}`,
		"billing": `{"turns": [
			{"tool_calls": [{"id": "h2", "name": "transfer_to_triage", "arguments": "{}"}]},
			{"expect": {"last_role": "tool"}, "tool_calls": [{"id": "h3", "name": "transfer_to_refunds", "arguments": "{}"}]}]}`,
		"refunds": `{"turns": [
			{"tool_calls": [{"id": "h4", "name": "transfer_to_billing", "arguments": "{}"}]},
			{"expect": {"tools_offered": false}, "text": "Could not finish: too many transfers."}]}`,
	})
	code, evs, stderr := e.runJSON(t, "help")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (incomplete): %s", code, stderr)
	}
	equalStrings(t, "actors", actors(evs), []string{
		"triage:transfer_to_billing", "handoff triage→billing depth 1 ()",
		"billing:transfer_to_triage", // refused: a cycle
		"billing:transfer_to_refunds", "handoff billing→refunds depth 2 ()",
		"refunds:transfer_to_billing", // refused: max_handoffs
		"refunds:incomplete/max_handoffs",
	})
	var errs []string
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.ToolResultData); ok && d.IsError {
			errs = append(errs, d.Content)
		}
	}
	equalStrings(t, "refusals", errs, []string{
		"Error: transfer to triage refused: triage already acted in this run (triage → billing), and cycles are not allowed",
		"Error: transfer to billing refused: the run reached max_handoffs (2)",
	})
	replaysTheSame(t, e, evs)
}

// An agent with as_tool is called as ask_NAME: a sub-run on a session of its own whose
// answer is the call's result; --agent starts a run with another agent.
func TestE2E_AgentAsToolAndAgentFlag(t *testing.T) {
	e := teamEnv(t, `
[agents.expert]
provider = "expert"
system_prompt = "You know math."
as_tool = true`, map[string]string{
		"triage": `{"turns": [
			{"expect": {"tools": ["ask_expert"]}, "tool_calls": [{"id": "q1", "name": "ask_expert", "arguments": "{\"question\":\"what is 6*7?\"}"}]},
			{"expect": {"last_role": "tool"}, "text": "The expert says {{result q1}}."}]}`,
		"expert": `{"per_session": true, "turns": [{"expect": {"system": "You know math.", "contains": "6*7"}, "text": "42"}]}`,
	})
	code, evs, stderr := e.runJSON(t, "ask the expert")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var final, nested string
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.FinalData); ok {
			if ev.Path == "" {
				final = d.Text
			} else {
				nested = ev.Path + ": " + d.Text
			}
		}
	}
	if final != "The expert says 42." {
		t.Fatalf("final %q", final)
	}
	// The expert's run is in the stream, named by its path (--json keeps "path").
	if nested != "triage/expert: 42" {
		t.Fatalf("the nested run's final in the stream: %q", nested)
	}
	sub := sessionOf(t, evs) + ":ask:q1"
	show := e.agenthost(t, "sessions", "show", sub)
	if show.code != 0 || !strings.Contains(show.stdout, "user: what is 6*7?") || !strings.Contains(show.stdout, "assistant: 42") {
		t.Fatalf("sub-session %s: %d\n%s%s", sub, show.code, show.stdout, show.stderr)
	}

	code, evs, stderr = e.runJSON(t, "--agent", "expert", "what is 6*7?")
	if code != 0 || evs[0].Agent != "expert" {
		t.Fatalf("--agent expert: exit %d, first event by %q: %s", code, evs[0].Agent, stderr)
	}
	r := e.agenthost(t, "run", "--agent", "nobody", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, `--agent "nobody": no such agent (agents: triage, expert)`) {
		t.Fatalf("--agent nobody: %d %s", r.code, r.stderr)
	}
}

// plugins list shows each agent's hand-off and ask_ tools as its model sees them, from
// the specs a run offers (loop.Agent.TeamTools), and starts no provider for them: the
// billing agent's provider is a command that does not exist.
func TestE2E_PluginsListShowsTheTeamTools(t *testing.T) {
	e := teamEnv(t, `handoffs = ["billing"]

[agents.billing]
provider = "nowhere"
handoffs = ["triage"]
as_tool = true

[agents.research]
as_tool = true

[providers.nowhere]
command = "/nonexistent/agenthost-provider-nowhere"`, map[string]string{"triage": `{"turns": [{"text": "never"}]}`})
	r := e.agenthost(t, "plugins", "list")
	if r.code != 0 {
		t.Fatalf("plugins list: %d\n%s", r.code, r.stderr)
	}
	var rows []string // the table's rows, spaces collapsed (the KIND column's width varies)
	for _, line := range strings.Split(r.stdout, "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	for _, row := range []string{
		"triage agent - transfer_to_billing, ask_billing, ask_research",
		"billing agent - transfer_to_triage, ask_research",
		"research agent - ask_billing",
	} {
		if !slices.Contains(rows, row) {
			t.Errorf("plugins list lacks %q:\n%s", row, r.stdout)
		}
	}
	r = e.agenthost(t, "plugins", "list", "--json")
	var infos []struct {
		Name, Kind string
		Tools      []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatalf("--json: %v %s", err, r.stdout)
	}
	var agents []string
	for _, i := range infos {
		if i.Kind == "agent" {
			agents = append(agents, i.Name+": "+strings.Join(i.Tools, ", "))
		}
	}
	equalStrings(t, "agents' team tools", agents, []string{
		"triage: transfer_to_billing, ask_billing, ask_research", "billing: transfer_to_triage, ask_research", "research: ask_billing"})
}
