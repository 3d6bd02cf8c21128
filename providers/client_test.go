package providers_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

func startScripted(t *testing.T, script string) *providers.Client {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	c, err := providers.Start(context.Background(), providers.ClientConfig{
		Name:    "scripted",
		Command: scriptedBin,
		Options: map[string]string{"script": abs},
		Stderr:  testWriter{t},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testWriter sends the adapter's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("adapter: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func userMsg(text string) *providers.Message {
	return &providers.Message{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: text}}}
}

var calcTool = &providers.Tool{Name: "calc", Description: "evaluate", InputSchema: `{"type":"object"}`}

// TestDemoFixtureThroughSubprocess plays the demo fixture through the real
// adapter binary: options reach the adapter (the script path), events arrive
// numbered, typed errors cross the process boundary, {{result}} and chunk work.
func TestDemoFixtureThroughSubprocess(t *testing.T) {
	c := startScripted(t, "testdata/demo.json")
	ctx := context.Background()

	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.GetName() != "scripted" || strings.Join(info.GetCapabilities(), ",") != "tools,reasoning,streaming,embeddings" {
		t.Fatalf("Info = %v", info)
	}

	req := &providers.ChatRequest{Model: "demo", Messages: []*providers.Message{userMsg("what is 17*23?")}, Tools: []*providers.Tool{calcTool}}
	st, err := c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if err != io.EOF {
		t.Fatalf("turn 1 ended with %v", err)
	}
	want := join([]string{
		`1 reasoning "need the calculator"`,
		`2 tool_call 0 id=c1 name=calc args="{\"expression\":\"17*23\"}"`,
		`3 usage prompt=12 completion=9 total=21`,
		`4 finish tool_use`,
	})
	if join(got) != want {
		t.Fatalf("turn 1:\n%s\nwant:\n%s", join(got), want)
	}

	st, err = c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err = collect(t, st)
	var pe *providers.Error
	if len(got) != 0 || !errors.As(err, &pe) {
		t.Fatalf("turn 2: events %q, err %v; want a typed error only", got, err)
	}
	if pe.Kind != providers.KindRateLimit || pe.RetryAfter != 20*time.Millisecond || !pe.Retryable {
		t.Fatalf("turn 2 error = %+v", pe)
	}

	req.Messages = append(req.Messages,
		&providers.Message{Role: providers.RoleAssistant, ToolCalls: []*providers.ToolCall{{Id: "c1", Name: "calc", Arguments: `{"expression":"17*23"}`}}},
		&providers.Message{Role: providers.RoleTool, ToolCallId: "c1", Content: []*providers.Part{{Type: providers.PartText, Text: "391"}}})
	st, err = c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err = collect(t, st)
	if err != io.EOF {
		t.Fatalf("turn 3 ended with %v", err)
	}
	want = join([]string{`1 text "17*2"`, `2 text "3 = "`, `3 text "391"`, `4 finish end_turn`})
	if join(got) != want {
		t.Fatalf("turn 3:\n%s\nwant:\n%s", join(got), want)
	}

	st, err = c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	if !errors.As(err, &pe) || pe.Kind != providers.KindProvider || pe.Retryable ||
		!strings.Contains(pe.Message, "scripted: out of turns: call 4, but ") || !strings.HasSuffix(pe.Message, "demo.json has 3 turns") {
		t.Fatalf("out of turns: %v", err)
	}
}

// TestExpectMismatchNamesTurn checks the fixture's expect through the process.
func TestExpectMismatchNamesTurn(t *testing.T) {
	c := startScripted(t, "testdata/demo.json")
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: []*providers.Message{userMsg("what is 2+2?")}, Tools: []*providers.Tool{calcTool}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	want := `provider: scripted: turn 1: expect.contains "17*23" not found in the last user message`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestConfigureErrorFailsStart: a bad option is reported by Start, with the
// provider's name, and leaves no client behind.
func TestConfigureErrorFailsStart(t *testing.T) {
	_, err := providers.Start(context.Background(), providers.ClientConfig{
		Name: "scripted", Command: scriptedBin, Options: map[string]string{"scrpit": "x.json"},
	})
	if err == nil || !strings.Contains(err.Error(), `start provider "scripted": configure:`) || !strings.Contains(err.Error(), `scripted: unknown option "scrpit"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestAdapterKilledMidStream: killing the adapter while a call streams gives
// a retryable typed error (not a hang), and the next call runs on a new
// process, configured again (the script restarts at turn 1).
func TestAdapterKilledMidStream(t *testing.T) {
	c := startScripted(t, "testdata/slow.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}}

	st, err := c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := collect(t, st); err != io.EOF || join(got) != join([]string{`1 text "hello"`, `2 finish end_turn`}) {
		t.Fatalf("call 1: %q, %v", got, err)
	}

	st, err = c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Recv()
	if err != nil || providers.FormatEvent(ev) != `1 text "a"` {
		t.Fatalf("call 2 first event: %v, %v", ev, err)
	}
	oldPID := c.PID()
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindProvider || !pe.Retryable ||
		!strings.Contains(pe.Message, `provider "scripted": adapter process exited mid-stream`) {
		t.Fatalf("after kill: %v", err)
	}
	if pe.Process == 0 { // what lets a breaker count the crash once (host/breaker.go)
		t.Fatal("the failure does not name the process that died")
	}
	if ctx.Err() != nil {
		t.Fatal("Recv returned only because the test's deadline passed")
	}

	st, err = c.Stream(ctx, req)
	if err != nil {
		t.Fatalf("call after restart: %v", err)
	}
	if got, err := collect(t, st); err != io.EOF || join(got) != join([]string{`1 text "hello"`, `2 finish end_turn`}) {
		t.Fatalf("call after restart: %q, %v", got, err)
	}
	if c.PID() == oldPID || c.PID() == 0 {
		t.Fatalf("PID after restart = %d, killed %d", c.PID(), oldPID)
	}
	if served, idle := providers.SessionsOf(c); !served || idle != 1 { // the new process was asked again
		t.Fatalf("after restart: session served %v, %d idle; want true, 1", served, idle)
	}
}

// TestWrongSHA256RefusesToStart: the pin is checked before anything runs and
// the error names the binary and both digests; the right pin starts.
func TestWrongSHA256RefusesToStart(t *testing.T) {
	data, err := os.ReadFile(scriptedBin)
	if err != nil {
		t.Fatal(err)
	}
	have := fmt.Sprintf("%x", sha256.Sum256(data))
	wrong := strings.Repeat("ab", 32)
	_, err = providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: scriptedBin, SHA256: wrong})
	want := fmt.Sprintf(`start provider "scripted": sha256 mismatch for %s: pinned %s, file has %s`, scriptedBin, wrong, have)
	if !errors.Is(err, providers.ErrChecksumMismatch) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}

	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: scriptedBin, SHA256: have})
	if err != nil {
		t.Fatalf("right pin: %v", err)
	}
	c.Close()
}

// TestStartTimeout: a program that never completes the handshake is killed
// and reported, not waited on forever.
func TestStartTimeout(t *testing.T) {
	_, err := providers.Start(context.Background(), providers.ClientConfig{
		Name: "mute", Command: "/bin/sleep", Args: []string{"300"}, StartTimeout: 300 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), `start provider "mute": adapter /bin/sleep did not complete the handshake within 300ms; it wrote nothing to stderr (timeout while waiting for plugin to start)`) {
		t.Fatalf("err = %v", err)
	}
}

// TestCancelIsNotAFailure: cancelling a call returns the context's error and
// keeps the process (no restart): the fixture goes on where it was.
func TestCancelIsNotAFailure(t *testing.T) {
	c := startScripted(t, "testdata/slow.json")
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}}
	if st, err := c.Stream(context.Background(), req); err != nil {
		t.Fatal(err)
	} else if _, err := collect(t, st); err != io.EOF {
		t.Fatalf("call 1: %v", err)
	}
	pid := c.PID()

	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := st.Recv(); err != nil || providers.FormatEvent(ev) != `1 text "a"` {
		t.Fatalf("call 2 first event: %v, %v", ev, err)
	}
	cancel()
	if _, err := st.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}

	st, err = c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	if err == nil || !strings.Contains(err.Error(), "scripted: out of turns: call 3") || c.PID() != pid {
		t.Fatalf("call 3: %v (pid %d, was %d)", err, c.PID(), pid)
	}
}

// TestConcurrentStreams: calls share one process, and seq counts per call.
func TestConcurrentStreams(t *testing.T) {
	c := startScripted(t, "testdata/bench.json")
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("1+1")}}
	want := join([]string{
		`1 reasoning "thinking"`,
		`2 text "hello world"`,
		`3 tool_call 0 id=c1 name=calc args="{\"expression\":\"1+1\"}"`,
		`4 usage prompt=10 completion=5 total=15`,
		`5 finish tool_use`,
	})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			st, err := c.Stream(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			got, err := collect(t, st)
			if err != io.EOF || join(got) != want {
				err = fmt.Errorf("got %q, %v", got, err)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
