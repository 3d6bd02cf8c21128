package providers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/providers"
)

// startHelper starts the test binary as the session helper adapter kind
// (sessionhelper_test.go), with fixture (when not "") as its scripted model's script.
func startHelper(t *testing.T, kind, fixture string, cfg providers.ClientConfig) *providers.Client {
	t.Helper()
	cfg.Name, cfg.Command, cfg.Env = kind, os.Args[0], []string{sessionHelperEnv + "=" + kind}
	if cfg.Stderr == nil {
		cfg.Stderr = testWriter{t}
	}
	if fixture != "" {
		script := filepath.Join(t.TempDir(), "fixture.json")
		if err := os.WriteFile(script, []byte(fixture), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Options = map[string]string{"script": script}
	}
	c, err := providers.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call runs one model call of model with messages and returns its events and how it ended.
func call(t *testing.T, ctx context.Context, c *providers.Client, model string, msgs ...*providers.Message) (string, error) {
	t.Helper()
	if len(msgs) == 0 {
		msgs = []*providers.Message{userMsg("hi")}
	}
	st, err := c.Stream(ctx, &providers.ChatRequest{Model: model, Messages: msgs})
	if err != nil {
		return "", err
	}
	got, err := collect(t, st)
	return join(got), err
}

func wantOK(t *testing.T, c *providers.Client, model, want string) {
	t.Helper()
	got, err := call(t, context.Background(), c, model)
	if !errors.Is(err, io.EOF) || got != want {
		t.Fatalf("call %q: %q, %v; want %q", model, got, err, want)
	}
}

// Calls one after another ride one Session stream: it goes back to the pool after each
// call's finish, and the next call takes it again.
func TestSequentialCallsReuseOneSessionStream(t *testing.T) {
	c := startWith(t, `{"repeat": true, "turns": [{"text": "hello", "chunk": 2}]}`, providers.ClientConfig{})
	for i := range 3 {
		wantOK(t, c, "", join([]string{`1 text "he"`, `2 text "ll"`, `3 text "o"`, `4 finish end_turn`}))
		if served, idle := providers.SessionsOf(c); !served || idle != 1 {
			t.Fatalf("after call %d: session served %v, %d idle streams; want true, 1", i+1, served, idle)
		}
	}
}

// An adapter without Session (UNIMPLEMENTED) is served through Stream, call after call,
// with everything a call carries: numbered events, typed errors, the trace context.
func TestAdapterWithoutSessionIsCalledThroughStream(t *testing.T) {
	c := startHelper(t, "stream-only", `{"turns": [
		{"text": "one", "chunk": 2},
		{"text": "trace {{traceparent}}"},
		{"error": {"kind": "rate_limit", "message": "slow down", "retry_after_ms": 20}}]}`, providers.ClientConfig{})
	if served, _ := providers.SessionsOf(c); served {
		t.Fatal("the host believes a stream-only adapter serves Session")
	}
	wantOK(t, c, "", join([]string{`1 text "on"`, `2 text "e"`, `3 finish end_turn`}))
	sc := traced()
	got, err := call(t, trace.ContextWithSpanContext(context.Background(), sc), c, "")
	if want := fmt.Sprintf(`1 text "trace 00-%s-%s-01"`, sc.TraceID(), sc.SpanID()); !errors.Is(err, io.EOF) || !strings.HasPrefix(got, want) {
		t.Fatalf("traced call: %q, %v; want %s", got, err, want)
	}
	_, err = call(t, context.Background(), c, "")
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindRateLimit || pe.RetryAfter != 20*time.Millisecond || pe.Message != "slow down" {
		t.Fatalf("typed error: %#v", err)
	}
}

// The host's trace context reaches the adapter in the SessionRequest (Stream carries it
// in gRPC metadata), per call: a call traced after one that was not gets its own.
func TestTraceContextRidesEachSessionCall(t *testing.T) {
	c := startWith(t, `{"repeat": true, "turns": [{"text": "trace {{traceparent}}"}]}`, providers.ClientConfig{})
	wantOK(t, c, "", join([]string{`1 text "trace "`, `2 finish end_turn`}))
	sc := traced()
	got, err := call(t, trace.ContextWithSpanContext(context.Background(), sc), c, "")
	if want := fmt.Sprintf(`1 text "trace 00-%s-%s-01"`, sc.TraceID(), sc.SpanID()); !errors.Is(err, io.EOF) || !strings.HasPrefix(got, want) {
		t.Fatalf("traced call: %q, %v; want %s", got, err, want)
	}
	if served, idle := providers.SessionsOf(c); !served || idle != 1 {
		t.Fatalf("session served %v, %d idle; want true, 1", served, idle)
	}
}

func traced() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
}

// A call cancelled mid-stream drops its stream (the adapter's side of the call is
// cancelled with it): the next call runs on a fresh stream of the same process and
// gets exactly its own events, nothing the cancelled call left behind.
func TestCancelledCallDropsItsStreamAndTheNextCallIsClean(t *testing.T) {
	c := startWith(t, `{"turns": [{"text": "abc", "chunk": 1, "chunk_delay_ms": 600000}, {"text": "next"}]}`, providers.ClientConfig{})
	pid := c.PID()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Stream(ctx, &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := st.Recv(); err != nil || providers.FormatEvent(ev) != `1 text "a"` {
		t.Fatalf("first event: %v, %v", ev, err)
	}
	cancel()
	if _, err := st.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	if _, idle := providers.SessionsOf(c); idle != 0 {
		t.Fatalf("the cancelled call's stream went back to the pool (%d idle)", idle)
	}
	wantOK(t, c, "", join([]string{`1 text "next"`, `2 finish end_turn`}))
	if c.PID() != pid {
		t.Fatalf("adapter restarted: pid %d -> %d", pid, c.PID())
	}
}

// Calls at once each get a stream of their own and exactly their own events: each
// call's answer echoes its own tool result, in chunks, while the others stream too.
func TestConcurrentSessionCallsEachGetExactlyTheirOwnEvents(t *testing.T) {
	c := startWith(t, `{"repeat": true, "turns": [{"text": "{{result c1}}", "chunk": 4, "chunk_delay_ms": 1}]}`, providers.ClientConfig{})
	const n = 12
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := fmt.Sprintf("round %d, call %02d: %s", round, i, strings.Repeat(string(rune('a'+i)), 9))
				var want []string
				for j := 0; j < len(own); j += 4 {
					want = append(want, fmt.Sprintf("%d text %q", len(want)+1, own[j:min(j+4, len(own))]))
				}
				want = append(want, fmt.Sprintf("%d finish end_turn", len(want)+1))
				got, err := call(t, context.Background(), c, "", userMsg("echo"),
					&providers.Message{Role: providers.RoleAssistant, ToolCalls: []*providers.ToolCall{{Id: "c1", Name: "echo", Arguments: "{}"}}},
					&providers.Message{Role: providers.RoleTool, ToolCallId: "c1", Content: []*providers.Part{{Type: providers.PartText, Text: own}}})
				if !errors.Is(err, io.EOF) || got != join(want) {
					errs <- fmt.Errorf("call %d of round %d: %q, %v", i, round, got, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	if served, idle := providers.SessionsOf(c); !served || idle < 1 || idle > n {
		t.Fatalf("session served %v, %d idle streams; want 1..%d", served, idle, n)
	}
}

// An adapter that breaks the Session protocol fails the call that sees it with a
// clear, retryable error, never a hang or a panic; the stream is dropped and the next
// call, on a fresh stream of the same process, is clean.
func TestAdapterBreakingTheSessionProtocolFailsTheCallClearly(t *testing.T) {
	for _, tc := range []struct {
		model string
		first string // the events of the misbehaving call, when it ends cleanly
		want  string // the error of the call that sees the violation
	}{
		// An event for a call that ended is seen by the next call on the stream.
		{"stale", `1 finish end_turn`, `the adapter broke the session protocol: a message for call 1 with 1 events during call 2; the stream is dropped`},
		{"other-call", "", `the adapter broke the session protocol: a message for call 8 with 1 events during call 1; the stream is dropped`},
		{"batch", "", `the adapter broke the session protocol: 1 events after the end of call 1; the stream is dropped`},
		{"empty", "", `the adapter broke the session protocol: a message for call 1 with 0 events during call 1; the stream is dropped`},
		{"silent", `1 text "thinking"`, `no event for idle_timeout (2s) mid-stream`},
	} {
		t.Run(tc.model, func(t *testing.T) {
			// 2 s: the adapter's well-behaved events must never be 2 s apart, even under
			// -race on a loaded machine; only the silent one waits it out.
			c := startHelper(t, "hostile", "", providers.ClientConfig{IdleTimeout: 2 * time.Second})
			pid := c.PID()
			got, err := call(t, context.Background(), c, tc.model)
			if tc.model == "stale" {
				if !errors.Is(err, io.EOF) || got != tc.first {
					t.Fatalf("call before the stale event: %q, %v", got, err)
				}
				got, err = call(t, context.Background(), c, "ok")
			}
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Kind != providers.KindProvider || !pe.Retryable ||
				pe.Message != `provider "hostile": `+tc.want {
				t.Fatalf("err = %#v\nwant %s", err, tc.want)
			}
			if tc.model == "silent" && got != tc.first {
				t.Fatalf("events before the silence: %q", got)
			}
			if _, idle := providers.SessionsOf(c); idle != 0 {
				t.Fatalf("the broken stream went back to the pool (%d idle)", idle)
			}
			wantOK(t, c, "ok", join([]string{`1 text "ok"`, `2 finish end_turn`}))
			if c.PID() != pid {
				t.Fatalf("adapter restarted: pid %d -> %d", pid, c.PID())
			}
		})
	}
}

// Serve keeps a Go adapter to the protocol: a call it ends without a finish gets a
// retryable error event, and an event it sends after the finish is refused to it (its
// send returns an error) instead of reaching the host. The stream stays usable.
func TestServeKeepsAGoAdapterToTheSessionProtocol(t *testing.T) {
	c := startHelper(t, "served", "", providers.ClientConfig{})
	_, err := call(t, context.Background(), c, "no-finish")
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindProvider || !pe.Retryable ||
		pe.Message != "the adapter ended the call without a finish event" {
		t.Fatalf("no-finish: %#v", err)
	}
	wantOK(t, c, "after-finish", `1 finish end_turn`)
	wantOK(t, c, "report", join([]string{`1 text "send after finish: the call has already ended (finish or error sent)"`, `2 finish end_turn`}))
	if served, idle := providers.SessionsOf(c); !served || idle != 1 {
		t.Fatalf("session served %v, %d idle; want true, 1", served, idle)
	}
}

// An adapter that dies between calls leaves a stream in the pool that leads nowhere: the
// next call either fails with the usual retryable error (the death not yet noticed) or
// already runs on a new process; the call after it runs on a new process, which was
// asked about Session again. Never a hang, never a stale event.
func TestAdapterDeadWhileItsStreamIsIdleFailsOneCallAtMost(t *testing.T) {
	c := startWith(t, `{"repeat": true, "turns": [{"text": "hi"}]}`, providers.ClientConfig{})
	want := join([]string{`1 text "hi"`, `2 finish end_turn`})
	wantOK(t, c, "", want)
	pid := c.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got, err := call(t, context.Background(), c, "")
	var pe *providers.Error
	switch {
	case errors.Is(err, io.EOF) && got == want && c.PID() != pid:
	case errors.As(err, &pe) && pe.Kind == providers.KindProvider && pe.Retryable &&
		strings.Contains(pe.Message, `provider "scripted": adapter process `) && strings.Contains(pe.Message, "it will be restarted for the next call"):
	default:
		t.Fatalf("first call after the kill: %q, %#v", got, err)
	}
	wantOK(t, c, "", want)
	if served, idle := providers.SessionsOf(c); c.PID() == pid || !served || idle != 1 {
		t.Fatalf("pid %d (killed %d), session served %v, %d idle", c.PID(), pid, served, idle)
	}
}
