package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/agenthost/loop"
)

const secret = "SECRET-7f3a"

// failingRun traces a run as the host does, in which every failure carries the secret:
// a tool's error result, a tool that could not run, a hook that failed, and the run's
// own error. It returns every span ended.
func failingRun(t *testing.T, capture bool) []sdktrace.ReadOnlySpan {
	t.Helper()
	return failingRunWith(t, Options{CaptureContent: capture})
}

func failingRunWith(t *testing.T, opts Options) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tel, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel.tracer = tel.tp.Tracer("test")
	defer tel.Shutdown(context.Background())

	in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}}
	ctx, endRun := tel.StartRun(context.Background(), "agent", &in)
	_, end := ToolSpan(ctx, "lookup", "p", `{"q":"`+secret+`"}`)
	end(loop.ErrorResult("Error: no row for "+secret+"\nsecond line"), nil)
	_, end = ToolSpan(ctx, "trap", "p", `{}`)
	end(loop.ToolResult{}, fmt.Errorf("plugin %q: call_tool: guest error: %s", "p", secret))
	_, endHook := HookSpan(ctx, "guardrail", "g", "check_input")
	endHook(errors.New("blocked: " + secret))
	endRun(loop.RunResult{Status: loop.StatusFailed, Reason: loop.ReasonHookStop, Err: errors.New("guardrail g: " + secret)})
	return rec.Ended()
}

// where lists the places of spans that hold the secret: names, attributes, event
// attributes and status descriptions.
func where(spans []sdktrace.ReadOnlySpan) []string {
	var at []string
	for _, s := range spans {
		if strings.Contains(s.Name(), secret) {
			at = append(at, s.Name()+": name")
		}
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), secret) {
				at = append(at, s.Name()+": "+string(a.Key))
			}
		}
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				if strings.Contains(a.Value.String(), secret) {
					at = append(at, s.Name()+": event "+e.Name+" "+string(a.Key))
				}
			}
		}
		if strings.Contains(s.Status().Description, secret) {
			at = append(at, s.Name()+": status")
		}
	}
	return at
}

// TestNoToolDataInSpansWithoutCaptureContent: without capture_content, a failing tool's
// error text (its result or its error), a hook's and the run's error text reach no span:
// not an attribute, an event or a status description. The failures are still marked,
// with their error.type as the status.
func TestNoToolDataInSpansWithoutCaptureContent(t *testing.T) {
	spans := failingRun(t, false)
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	if at := where(spans); len(at) > 0 {
		t.Fatalf("the secret is in spans without capture_content: %v", at)
	}
	got := map[string]string{}
	for _, s := range spans {
		got[s.Name()] = s.Status().Code.String() + " " + s.Status().Description
	}
	want := map[string]string{
		"execute_tool lookup": "Error tool_error", "execute_tool trap": "Error _OTHER",
		"guardrail g": "Error _OTHER", "invoke_agent agent": "Error hook_stop",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v\nwant %v", got, want)
	}
}

// TestToolDataInSpansWithCaptureContent: with capture_content the same text is recorded,
// as the setting promises: the tool's arguments and result, and each status.
func TestToolDataInSpansWithCaptureContent(t *testing.T) {
	at := where(failingRun(t, true))
	want := []string{
		"execute_tool lookup: gen_ai.tool.call.arguments", "execute_tool lookup: gen_ai.tool.call.result", "execute_tool lookup: status",
		"execute_tool trap: status", "guardrail g: status", "invoke_agent agent: status",
	}
	if fmt.Sprint(at) != fmt.Sprint(want) {
		t.Fatalf("secret found at %v\nwant %v", at, want)
	}
}

// With capture_content and a Scrub (the [redact] "telemetry" stage), every captured text
// goes through it: the secret reaches no span, and what the scrub left is there.
func TestCapturedContentIsScrubbed(t *testing.T) {
	spans := failingRunWith(t, Options{CaptureContent: true, Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[x]") }})
	if at := where(spans); len(at) > 0 {
		t.Fatalf("the secret passed the scrub at %v", at)
	}
	found := false
	for _, s := range spans {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), "[x]") {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("no scrubbed text in any attribute: the scrub was not applied to captured content")
	}
}

type quotingModel struct{ err error }

func (m quotingModel) Stream(context.Context, loop.Request) (loop.Stream, error) { return nil, m.err }

// A failed model call's retry event keeps the provider's message (operators need it),
// and the message passes the Scrub: a provider that quotes the prompt in its error
// does not carry what the telemetry stage redacts into the trace.
func TestRetryEventMessageIsScrubbed(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel, err := New(context.Background(), Options{Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[x]") }})
	if err != nil {
		t.Fatal(err)
	}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel.tracer = tel.tp.Tracer("test")
	defer tel.Shutdown(context.Background())
	in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}}
	ctx, endRun := tel.StartRun(context.Background(), "agent", &in)
	m := WrapModel(quotingModel{errors.New("invalid request: the message " + secret + " is too long")}, "p", "m")
	if _, err := m.Stream(ctx, loop.Request{}); err == nil {
		t.Fatal("the model did not fail")
	}
	endRun(loop.RunResult{Status: loop.StatusFailed, Reason: loop.ReasonError})
	spans := rec.Ended()
	if at := where(spans); len(at) > 0 {
		t.Fatalf("the secret passed the scrub at %v", at)
	}
	for _, s := range spans {
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				if a.Key == "error.message" && a.Value.AsString() == "invalid request: the message [x] is too long" {
					return
				}
			}
		}
	}
	t.Fatal("no retry event with the scrubbed message")
}
