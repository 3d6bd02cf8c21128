package loop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDoneToolRunDoesNotReportModelRunningAfterStepComplete(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "done", `{"answer":"42"}`)}})
	a := newAgent(t, Config{Model: m, Tools: tools(t, doneTool())})
	res, evs := runCollect(t, a, userIn("s1", "q"))
	if res.Status != StatusCompleted || res.Reason != ReasonDoneTool {
		t.Fatalf("%s/%s", res.Status, res.Reason)
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:model_running",
		"assistant_message", "usage", "status:tool_running", "step_start:done", "tool_call:done",
		"tool_result:done", "step_complete:ok", "final", "status:completed", "run_finished:completed/done_tool"})
}

func TestL17_EventSeqIsGaplessPerSessionAcrossRuns(t *testing.T) {
	m := script(turn{text: "one"}, turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "two"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool())})
	var seqs []int64
	for _, text := range []string{"a", "b"} {
		_, evs := runCollect(t, a, userIn("s1", text))
		for _, e := range evs {
			seqs = append(seqs, e.Seq)
		}
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seq %d at position %d: %v", s, i, seqs)
		}
	}
	// A new session starts at 1 again.
	_, evs := runCollect(t, a, userIn("s2", "c"))
	if evs[0].Seq != 1 {
		t.Fatalf("new session starts at %d", evs[0].Seq)
	}
}

func TestL20_DefaultContextHonoursTheContextBudget(t *testing.T) {
	var sent int
	m := script(turn{text: "ok", check: func(r Request) { sent = EstimateTokens(r.Messages) }})
	a := newAgent(t, Config{Model: m, SystemPrompt: "be brief", ContextBudget: 50})
	// A session whose history alone is about 1,000 tokens.
	for i := range 4 {
		if err := a.Store().Append(context.Background(), "s1",
			Entry{Seq: int64(2*i + 1), Kind: EntryMessage, Message: ptr(UserMessage(strings.Repeat("word ", 200)))},
			Entry{Seq: int64(2*i + 2), Kind: EntryMessage, Message: ptr(Message{Role: RoleAssistant, Content: []Part{TextPart("fine")}})}); err != nil {
			t.Fatal(err)
		}
	}
	res, _ := runCollect(t, a, userIn("s1", strings.Repeat("long question ", 40)))
	if res.Status != StatusCompleted {
		t.Fatalf("%s/%s %v", res.Status, res.Reason, res.Err)
	}
	if sent > 50 || sent == 0 {
		t.Fatalf("sent %d estimated tokens against a budget of 50", sent)
	}
}

func TestL20_FitBudgetKeepsToolResultsWithTheirCall(t *testing.T) {
	msgs := []Message{{Role: RoleSystem, Content: []Part{TextPart("sys")}}, UserMessage(strings.Repeat("x", 400)),
		{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1", "echo", "{}")}},
		{Role: RoleTool, ToolCallID: "c1", Content: []Part{TextPart(strings.Repeat("y", 400))}},
		UserMessage("next"), {Role: RoleAssistant, Content: []Part{TextPart("done")}}}
	out := fitBudget(msgs, 40)
	if EstimateTokens(out) > 40 || out[0].Role != RoleSystem || out[1].Role != RoleUser ||
		!strings.HasPrefix(out[1].Text(), "[context trimmed: 3 earlier") || out[2].Text() != "next" {
		t.Fatalf("fitted %+v", out)
	}
	if got := fitBudget(msgs, 0); len(got) != len(msgs) {
		t.Fatal("budget 0 must change nothing")
	}
}

func TestL18_TokenBudgetIsCheckedBeforeTheModelCall(t *testing.T) {
	m := script(turn{text: "never"})
	a := newAgent(t, Config{Model: m, Limits: Limits{MaxTokens: 100}})
	res, evs := runCollect(t, a, userIn("s1", strings.Repeat("word ", 200)))
	if res.Status != StatusIncomplete || res.Reason != ReasonBudgetExceeded || len(m.requests()) != 0 {
		t.Fatalf("%s/%s, %d model calls", res.Status, res.Reason, len(m.requests()))
	}
	if want := fmt.Sprintf(fallbackSummary, ReasonBudgetExceeded); res.Final.Text() != want {
		t.Fatalf("final %q", res.Final.Text())
	}
	equal(t, "events", kinds(evs), []string{"run_started", "status:preparing", "status:model_running",
		"final", "status:completed", "run_finished:incomplete/budget_exceeded"})
}

func TestL18_CostBudgetIsCheckedBeforeTheModelCall(t *testing.T) {
	m := script(turn{text: "never"})
	a := newAgent(t, Config{Model: m, Limits: Limits{MaxCostUSD: 0.0001}, Pricing: Pricing{PromptPerMTok: 1}})
	res, _ := runCollect(t, a, userIn("s1", strings.Repeat("word ", 200)))
	if res.Reason != ReasonBudgetExceeded || len(m.requests()) != 0 {
		t.Fatalf("%s/%s, %d model calls", res.Status, res.Reason, len(m.requests()))
	}
}

func TestL9_SummaryCallHasItsOwnDeadline(t *testing.T) {
	m := script(turn{hang: true}, turn{hang: true})
	a := newAgent(t, Config{Model: m, Limits: Limits{MaxRunDuration: 20 * time.Millisecond}})
	res, _ := runCollect(t, a, userIn("s1", "q"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxDuration ||
		res.Final.Text() != fmt.Sprintf(fallbackSummary, ReasonMaxDuration) || len(m.requests()) != 2 {
		t.Fatalf("%s/%s final %v, %d calls", res.Status, res.Reason, res.Final, len(m.requests()))
	}
}

func TestL19_InvalidUTF8InInputIsReplaced(t *testing.T) {
	var got string
	m := script(turn{text: "ok", check: func(r Request) { got = r.Messages[len(r.Messages)-1].Text() }})
	a := newAgent(t, Config{Model: m})
	in := userIn("s1", "bad \xff\xfe byte")
	res, _ := runCollect(t, a, in)
	if res.Status != StatusCompleted || got != "bad \uFFFD byte" {
		t.Fatalf("%s/%s sent %q", res.Status, res.Reason, got)
	}
	if in.Messages[0].Text() != "bad \xff\xfe byte" {
		t.Fatal("the caller's message was modified")
	}
	bad := Message{Role: RoleAssistant, Name: "\xff", Reasoning: "\xc3", Content: []Part{{Type: PartImage, URL: "u\xff"}},
		ToolCalls: []ToolCall{{ID: "i\xff", Name: "n", Arguments: "{\"a\":\"\xff\"}"}}}
	fixed := validUTF8([]Message{UserMessage("fine"), bad})
	if !messageValid(fixed[1]) || fixed[1].ToolCalls[0].Arguments != "{\"a\":\"\uFFFD\"}" || messageValid(bad) {
		t.Fatalf("fixed %+v", fixed[1])
	}
}
