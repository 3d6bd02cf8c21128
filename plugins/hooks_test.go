package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// The hook tests feed the loop's own types (loop.ContextInput, …) to the
// plugins and decode their answers strictly into the loop's output types, so
// they also prove the SDK's shapes and the loop's agree.

func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s into %T: %v", out, v, err)
	}
}

func user(s string) loop.Message { return loop.UserMessage(s) }
func assistant(s string) loop.Message {
	return loop.Message{Role: loop.RoleAssistant, Content: []loop.Part{loop.TextPart(s)}}
}
func system(s string) loop.Message {
	return loop.Message{Role: loop.RoleSystem, Content: []loop.Part{loop.TextPart(s)}}
}
func toolMsg(id, s string) loop.Message {
	return loop.Message{Role: loop.RoleTool, ToolCallID: id, Content: []loop.Part{loop.TextPart(s)}}
}
func callMsg(id string) loop.Message {
	return loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: id, Name: "calc", Arguments: `{"expression":"1+1"}`}}}
}

func texts(msgs []loop.Message) string {
	var s []string
	for _, m := range msgs {
		t := m.Text()
		if len(m.ToolCalls) > 0 {
			t = "call:" + m.ToolCalls[0].ID
		}
		s = append(s, string(m.Role)+":"+t)
	}
	return strings.Join(s, " | ")
}

func contextBuild(t *testing.T, p *sandbox.Plugin, in loop.ContextInput) loop.ContextOutput {
	t.Helper()
	var out loop.ContextOutput
	decodeStrict(t, callExport(t, p, "context_build", in), &out)
	return out
}

func TestSlidingWindow(t *testing.T) {
	p := loadExample(t, "go/sliding_window", sandbox.Config{Permissions: sandbox.Permissions{Config: map[string]string{"keep": "3"}}})
	history := []loop.Message{user("u1"), assistant("a1"), user("u2"), callMsg("c1"), toolMsg("c1", "2"), assistant("a2")}
	msgs := append([]loop.Message{system("sys")}, history...)
	out := contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs})
	if got := texts(out.Messages); got != "system:sys | assistant:call:c1 | tool:2 | assistant:a2" {
		t.Errorf("window = %s", got)
	}
	// Overflow halves the window (3/2 = 1) and a leading tool result is dropped.
	out = contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs[:6], Overflow: true})
	if got := texts(out.Messages); got != "system:sys" {
		t.Errorf("overflow window = %s", got)
	}
	// Short enough: unchanged (no messages in the answer).
	out = contextBuild(t, p, loop.ContextInput{History: history[:2], Messages: msgs[:3]})
	if out.Messages != nil || out.Compact != nil {
		t.Errorf("short history changed: %+v", out)
	}
	bad := loadExample(t, "go/sliding_window", sandbox.Config{Name: "bad", Permissions: sandbox.Permissions{Config: map[string]string{"keep": "many"}}})
	_, err := bad.CallExport(context.Background(), "context_build", []byte(`{"history":[],"messages":[]}`))
	var fault *sandbox.Fault
	if !errors.As(err, &fault) || !strings.Contains(err.Error(), `context_build: config keep = "many": not an integer`) {
		t.Errorf("bad config: %v", err)
	}
}

func TestTokenBudget(t *testing.T) {
	p := loadExample(t, "go/token_budget", sandbox.Config{})
	long := strings.Repeat("x", 40) // 10 + 4 = 14 tokens
	history := []loop.Message{user(long), callMsg("c1"), toolMsg("c1", long), assistant(long), user(long)}
	msgs := append([]loop.Message{system("sys")}, history...) // 5 + 14 + 10 + 14 + 14 + 14 = 71
	if out := contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs, Budget: 71}); out.Messages != nil {
		t.Errorf("fits the budget but changed: %s", texts(out.Messages))
	}
	if out := contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs}); out.Messages != nil {
		t.Errorf("no budget but changed: %s", texts(out.Messages))
	}
	out := contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs, Budget: 50})
	// Dropping u1 (57) and then the call (47) leaves a tool result first, which goes too.
	if got := texts(out.Messages); got != "system:sys | assistant:"+long+" | user:"+long {
		t.Errorf("trimmed = %s", got)
	}
	// Overflow aims at 3/4 of 40 = 30: only the last message (and the system prompt) stay.
	out = contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs, Budget: 40, Overflow: true})
	if got := texts(out.Messages); got != "system:sys | user:"+long {
		t.Errorf("overflow trimmed = %s", got)
	}
}

func TestSummarize(t *testing.T) {
	host := &recordingHost{answer: "  The user asked for 1+1; the agent computed 2.  "}
	p := loadExample(t, "go/summarize", sandbox.Config{Host: host, Permissions: sandbox.Permissions{
		Model: true, Config: map[string]string{"max_messages": "4", "keep": "3"}}})
	history := []loop.Message{user("what is 1+1?"), callMsg("c1"), toolMsg("c1", "2"), assistant("It is 2."), user("and 2+2?")}
	msgs := append([]loop.Message{system("sys")}, history...)
	out := contextBuild(t, p, loop.ContextInput{History: history, Messages: msgs})
	// keep 3 would cut before the tool result: the cut moves back to the call.
	const summary = "Summary of the earlier conversation:\nThe user asked for 1+1; the agent computed 2."
	if got := texts(out.Messages); got != "system:sys | user:"+summary+" | assistant:call:c1 | tool:2 | assistant:It is 2. | user:and 2+2?" {
		t.Errorf("messages = %s", got)
	}
	if out.Compact == nil || out.Compact.Replace != 1 || texts(out.Compact.Summary) != "user:"+summary {
		t.Fatalf("compact = %+v", out.Compact)
	}
	wantJSON(t, "create_message request", host.requests[0], `{"messages":[{"role":"user","content":{"type":"text",`+
		`"text":"Summarise this conversation:\n\n[user] what is 1+1?"}}],`+
		`"systemPrompt":"You summarise conversations between a user and an AI agent. Keep facts, decisions, open tasks and tool results that matter; drop chatter. Answer with the summary only.",`+
		`"maxTokens":1024}`)
	// Short history, no overflow: unchanged, no model call.
	out = contextBuild(t, p, loop.ContextInput{History: history[:3], Messages: msgs[:4]})
	if out.Messages != nil || out.Compact != nil || len(host.requests) != 1 {
		t.Errorf("short history: %+v, %d requests", out, len(host.requests))
	}
	// Overflow compacts a short history too.
	out = contextBuild(t, p, loop.ContextInput{History: history[:4], Messages: msgs[:5], Overflow: true})
	if out.Compact == nil || out.Compact.Replace != 1 || len(host.requests) != 2 {
		t.Errorf("overflow: %+v, %d requests", out.Compact, len(host.requests))
	}
	// Without the model permission the host refuses and the call faults.
	denied := loadExample(t, "go/summarize", sandbox.Config{Name: "nomodel", Host: host, Permissions: sandbox.Permissions{
		Config: map[string]string{"max_messages": "1", "keep": "1"}}})
	in, _ := json.Marshal(loop.ContextInput{History: history, Messages: msgs})
	_, err := denied.CallExport(context.Background(), "context_build", in)
	if err == nil || !strings.Contains(err.Error(), `create_message: plugin "nomodel" has no model permission`) {
		t.Errorf("no model permission: %v", err)
	}
}

func decide(t *testing.T, p *sandbox.Plugin, export string, in any) loop.Decision {
	t.Helper()
	var d loop.Decision
	decodeStrict(t, callExport(t, p, export, in), &d)
	return d
}

func TestTodos(t *testing.T) {
	p := loadExample(t, "go/todos", sandbox.Config{})
	history := []loop.Message{user("Plan:\n- [ ] write tests\n- [ ] fix bug\n* [ ] deploy"), assistant("- [x] write tests\ndone with tests")}
	d := decide(t, p, "before_final", loop.FinalInfo{Iteration: 3, Text: "All done.\n- [X] deploy", History: history})
	want := loop.Decision{Verdict: loop.VerdictContinue, Reason: "1 unfinished todos",
		Message: "You still have unfinished todos:\n- [ ] fix bug\nFinish them (and mark them - [x]) before you give your final answer."}
	if d != want {
		t.Errorf("before_final = %+v\nwant %+v", d, want)
	}
	// All checked: the final passes.
	d = decide(t, p, "before_final", loop.FinalInfo{Text: "- [x] fix bug\n- [x] deploy", History: history})
	if d != (loop.Decision{}) {
		t.Errorf("all checked: %+v", d)
	}
	// After max_continuations (3) it gives up.
	d = decide(t, p, "before_final", loop.FinalInfo{Text: "done", Continuations: 3, History: history})
	if d != (loop.Decision{}) {
		t.Errorf("after 3 continuations: %+v", d)
	}
	if d := decide(t, p, "on_step", loop.StepInfo{Iteration: 1, Message: callMsg("c1")}); d != (loop.Decision{}) {
		t.Errorf("on_step = %+v", d)
	}
}

func TestBudgetGuard(t *testing.T) {
	p := loadExample(t, "go/budget_guard", sandbox.Config{Permissions: sandbox.Permissions{
		Config: map[string]string{"max_cost_usd": "0.50", "max_turns": "10", "max_tokens": "100000"}}})
	step := func(iter int, u loop.Usage) loop.Decision {
		return decide(t, p, "on_step", loop.StepInfo{Iteration: iter, Usage: u, Message: callMsg("c")})
	}
	if d := step(2, loop.Usage{TotalTokens: 900, CostUSD: 0.1}); d != (loop.Decision{}) {
		t.Errorf("within budget: %+v", d)
	}
	for _, c := range []struct {
		iter int
		u    loop.Usage
		want loop.Decision
	}{
		{3, loop.Usage{CostUSD: 0.6213}, loop.Decision{Verdict: loop.VerdictStop, Reason: "cost_budget",
			Message: "Stopped before finishing: cost budget of $0.50 spent ($0.6213)."}},
		{10, loop.Usage{}, loop.Decision{Verdict: loop.VerdictStop, Reason: "turn_budget",
			Message: "Stopped before finishing: turn budget of 10 turns spent."}},
		{4, loop.Usage{TotalTokens: 100001}, loop.Decision{Verdict: loop.VerdictStop, Reason: "token_budget",
			Message: "Stopped before finishing: token budget of 100000 tokens spent (100001)."}},
	} {
		if d := step(c.iter, c.u); d != c.want {
			t.Errorf("step(%d, %+v) = %+v\nwant %+v", c.iter, c.u, d, c.want)
		}
	}
	if d := decide(t, p, "before_final", loop.FinalInfo{Iteration: 99, Usage: loop.Usage{CostUSD: 9}}); d != (loop.Decision{}) {
		t.Errorf("before_final = %+v", d)
	}
	unlimited := loadExample(t, "go/budget_guard", sandbox.Config{Name: "unlimited"})
	if d := decide(t, unlimited, "on_step", loop.StepInfo{Iteration: 1000, Usage: loop.Usage{CostUSD: 1000}}); d != (loop.Decision{}) {
		t.Errorf("no budgets configured: %+v", d)
	}
}

func TestRedact(t *testing.T) {
	p := loadExample(t, "go/redact", sandbox.Config{})
	guard := func(stage loop.Stage, content string) loop.GuardResult {
		var r loop.GuardResult
		decodeStrict(t, callExport(t, p, "guard", loop.GuardInput{Stage: stage, Content: content, Tool: "files"}), &r)
		return r
	}
	in := "Contact jane.doe+work@example.co.uk or +1 (555) 123-4567; key sk-proj-abcdefghijklmnop1234 and api_key=\"zq8Hx93LkQ\". Meeting 2024-01-15, room 42."
	want := loop.GuardResult{Action: loop.GuardRedact, Reason: "redacted 2 secrets, 1 email address, 1 phone number",
		Content: "Contact [redacted email] or [redacted phone]; key [redacted secret] and api_key=\"[redacted secret]\". Meeting 2024-01-15, room 42."}
	for _, stage := range []loop.Stage{loop.StageToolResult, loop.StageOutput} {
		if r := guard(stage, in); r != want {
			t.Errorf("guard(%s) = %+v\nwant %+v", stage, r, want)
		}
	}
	if r := guard(loop.StageToolResult, "AKIAIOSFODNN7EXAMPLE and a@b.io, 0044 20 7946 0958"); r.Content != "[redacted secret] and [redacted email], [redacted phone]" {
		t.Errorf("aws key/email/uk phone: %+v", r)
	}
	for _, clean := range []string{"nothing to see, version 1.2.3, 12345678", ""} {
		if r := guard(loop.StageOutput, clean); r != (loop.GuardResult{Action: loop.GuardAllow}) {
			t.Errorf("clean %q: %+v", clean, r)
		}
	}
	// Only tool results and output are redacted.
	if r := guard(loop.StageInput, in); r != (loop.GuardResult{Action: loop.GuardAllow}) {
		t.Errorf("input stage: %+v", r)
	}
}

// The media_guard example decides on what the host tells it of each media part (type,
// sniffed MIME type, size, name): a refused type or MIME pattern, or a part over
// max_bytes, blocks; anything else, and text alone, is allowed.
func TestMediaGuard(t *testing.T) {
	p := loadExample(t, "go/media_guard", sandbox.Config{Permissions: sandbox.Permissions{
		Config: map[string]string{"refuse": "audio, image/svg*", "max_bytes": "1000"}}})
	guard := func(media ...loop.MediaInfo) loop.GuardResult {
		var r loop.GuardResult
		decodeStrict(t, callExport(t, p, "guard", loop.GuardInput{Stage: loop.StageInput, Content: "look", Media: media}), &r)
		return r
	}
	pdf := loop.MediaInfo{Type: loop.PartFile, MimeType: "application/pdf", Size: 900, Name: "r.pdf"}
	for _, c := range []struct {
		media []loop.MediaInfo
		want  loop.GuardResult
	}{
		{nil, loop.GuardResult{Action: loop.GuardAllow}},
		{[]loop.MediaInfo{pdf}, loop.GuardResult{Action: loop.GuardAllow}},
		{[]loop.MediaInfo{pdf, {Type: loop.PartAudio, MimeType: "audio/wav", Size: 10, Name: "v.wav"}},
			loop.GuardResult{Action: loop.GuardBlock, Reason: `audio "v.wav" (audio/wav) is refused (audio)`}},
		{[]loop.MediaInfo{{Type: loop.PartFile, MimeType: "image/svg+xml", Size: 10}},
			loop.GuardResult{Action: loop.GuardBlock, Reason: `file part (image/svg+xml) is refused (image/svg*)`}},
		{[]loop.MediaInfo{{Type: loop.PartImage, MimeType: "image/png", Size: 1001, Name: "big.png"}},
			loop.GuardResult{Action: loop.GuardBlock, Reason: `image "big.png" is 1001 bytes, over 1000`}},
	} {
		if got := guard(c.media...); got != c.want {
			t.Errorf("%+v: got %+v, want %+v", c.media, got, c.want)
		}
	}
}
