package loop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

func textMsg(role Role, text string) Message {
	return Message{Role: role, Content: []Part{TextPart(text)}}
}

// L24: every message of a sampling passes the input guardrails (the system prompt and
// the caller's assistant turns too: all of it is the caller's), the model is offered no
// tool, the answer passes the output guardrails, and the session stores what the model
// saw and what the caller got.
func TestL24_SampleGuardsTheRequestAndTheAnswerAndStoresThem(t *testing.T) {
	var got Request
	m := script(turn{text: "the secret answer", check: func(r Request) { got = r }})
	g := &redactor{}
	a := newAgent(t, Config{Model: m, ModelName: "m1", Tools: tools(t, echoTool()), Guardrails: []Guardrail{g}, SystemPrompt: "the agent's own prompt"})
	out, res, err := a.Sample(context.Background(), SampleInput{SessionID: "smp", Caller: "plugin:p", MaxTokens: 7, Messages: []Message{
		textMsg(RoleSystem, "no secret here"), UserMessage("tell the secret"), textMsg(RoleAssistant, "a secret before"), UserMessage("again")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "the [REDACTED] answer" || out.Model != "m1" || out.Stop != StopEndTurn {
		t.Fatalf("answer %+v", out)
	}
	if res.Status != StatusCompleted || res.Reason != ReasonSampled || res.Final.Text() != out.Text {
		t.Fatalf("run %s/%s final %v", res.Status, res.Reason, res.Final)
	}
	var seen []string
	for _, msg := range got.Messages {
		seen = append(seen, string(msg.Role)+":"+msg.Text())
	}
	equal(t, "model saw", seen, []string{"system:no [REDACTED] here", "user:tell the [REDACTED]", "assistant:a [REDACTED] before", "user:again"})
	if len(got.Tools) != 0 || got.MaxTokens != 7 || got.Metadata.Extra["caller"] != "plugin:p" || got.Metadata.SessionID != "smp" {
		t.Fatalf("request tools %v max %d metadata %+v", got.Tools, got.MaxTokens, got.Metadata)
	}
	equal(t, "stored", history(t, a, "smp"), append(seen, "assistant:the [REDACTED] answer"))
	equal(t, "stages", g.stages, []Stage{StageInput, StageInput, StageInput, StageInput, StageOutput})
}

// A blocked prompt is refused before the model is asked and stores nothing of it; a
// blocked answer is refused to the caller and not stored; both are clear errors.
func TestL24_SampleBlockedPromptOrAnswerIsRefused(t *testing.T) {
	m := script(turn{text: "a forbidden answer"})
	a := newAgent(t, Config{Model: m, Guardrails: []Guardrail{&redactor{}}})
	_, res, err := a.Sample(context.Background(), SampleInput{SessionID: "in", Messages: []Message{UserMessage("say the forbidden word")}}, nil)
	if err == nil || !strings.Contains(err.Error(), `blocked by guardrail "redact" at input: forbidden word`) || res.Status != StatusFailed {
		t.Fatalf("blocked prompt: %v (%s)", err, res.Status)
	}
	if n := len(m.requests()); n != 0 {
		t.Fatalf("the model was asked %d times for a blocked prompt", n)
	}
	if h := history(t, a, "in"); len(h) != 0 {
		t.Fatalf("stored %q", h)
	}
	out, res, err := a.Sample(context.Background(), SampleInput{SessionID: "out", Messages: []Message{UserMessage("say something")}}, nil)
	if err == nil || !strings.Contains(err.Error(), `blocked by guardrail "redact" at output: forbidden word`) || out.Text != "" || res.Status != StatusFailed {
		t.Fatalf("blocked answer: %q %v (%s)", out.Text, err, res.Status)
	}
	equal(t, "stored", history(t, a, "out"), []string{"user:say something"})
	if _, _, err := a.Sample(context.Background(), SampleInput{}, nil); err == nil {
		t.Fatal("a sampling without messages was made")
	}
}

// A sampling made during a run (a tool's, as a plugin's create_message is) is a run
// nested in it: admitted against and charged to the calling run's budget.
func TestL24_SampleIsChargedToTheCallingRun(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "ask", `{}`)}, usage: &Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}},
		turn{text: "sampled", usage: &Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}},
		turn{text: "done", usage: &Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}},
	)
	var a *Agent
	prompt := "q"
	ask := FuncTool{ToolSpec: ToolSpec{Name: "ask"}, Fn: func(ctx context.Context, _ ToolCall) (ToolResult, error) {
		out, _, err := a.Sample(ctx, SampleInput{SessionID: "nested", Messages: []Message{UserMessage(prompt)}}, nil)
		if err != nil {
			return ToolResult{}, err
		}
		return TextResult(out.Text), nil
	}}
	a = newAgent(t, Config{Name: "caller", Model: m, Tools: tools(t, ask)})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Usage.TotalTokens != 11+120+11 {
		t.Fatalf("%s/%s with %d tokens, want completed with 142 (its calls and the sampling)", res.Status, res.Reason, res.Usage.TotalTokens)
	}
	// The sampling's events reach the calling run's stream under its path, its own
	// session named on them; the caller's own events have no path.
	var nested []string
	for _, e := range evs {
		if e.Path != "" {
			if e.Path != "caller/sampling:" || e.SessionID != "nested" {
				t.Fatalf("forwarded event %s path %q session %q", e.Type, e.Path, e.SessionID)
			}
			nested = append(nested, string(e.Type))
		}
	}
	if len(nested) == 0 || nested[0] != string(EventRunStarted) || nested[len(nested)-1] != string(EventRunFinished) {
		t.Fatalf("the sampling's events in the caller's stream: %v", nested)
	}
	m2 := script(turn{calls: []ToolCall{call("c1", "ask", `{}`)}, usage: &Usage{PromptTokens: 30, CompletionTokens: 1, TotalTokens: 31}}, turn{text: "never"}, turn{text: "after"})
	prompt = strings.Repeat("word ", 400) // far more than the 69 tokens the run has left
	a = newAgent(t, Config{Model: m2, Tools: tools(t, ask), Limits: Limits{MaxTokens: 100}})
	res, evs = runCollect(t, a, userIn("s2", "go"))
	results := eventsOf[ToolResultData](evs)
	if len(results) != 1 || !strings.Contains(results[0].Content, ErrBudgetExceeded.Error()) {
		t.Fatalf("over the budget the tool got %+v (run %s/%s)", results, res.Status, res.Reason)
	}
	if reqs := m2.requests(); len(reqs) > 1 && reqs[1].Metadata.SessionID == "nested" {
		t.Fatal("the model was asked for a sampling the budget cannot pay for")
	}
}

// recursing is a guardrail that asks for a sampling while it checks one: a sampling
// whose path leads back to sampling.
type recursing struct {
	a    *Agent
	mu   sync.Mutex
	errs []error
}

func (*recursing) Name() string { return "recursing" }
func (g *recursing) Check(ctx context.Context, in GuardInput) (GuardResult, error) {
	if in.Stage == StageInput {
		_, _, err := g.a.Sample(ctx, SampleInput{Messages: []Message{UserMessage("again")}}, nil)
		g.mu.Lock()
		g.errs = append(g.errs, err)
		g.mu.Unlock()
	}
	return GuardResult{Action: GuardAllow}, nil
}

// Samplings nested in samplings stop at MaxSampleDepth with ErrSampleDepth, a clear
// error the inner caller gets, instead of recursing without end.
func TestL24_SampleRecursionIsBounded(t *testing.T) {
	m := script(turn{text: "inner"}, turn{text: "outer"})
	g := &recursing{}
	g.a = newAgent(t, Config{Model: m, Guardrails: []Guardrail{g}})
	out, _, err := g.a.Sample(context.Background(), SampleInput{Messages: []Message{UserMessage("start")}}, nil)
	if err != nil || out.Text != "outer" {
		t.Fatalf("outer sampling: %q %v", out.Text, err)
	}
	if len(g.errs) != 2 || g.errs[0] == nil || !errors.Is(g.errs[0], ErrSampleDepth) || g.errs[1] != nil {
		t.Fatalf("nested samplings answered %v, want [depth refusal, nil] (depth %d)", g.errs, MaxSampleDepth)
	}
}
