package sandbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Guests that wait inside a host call (sleeping, an HTTP request, a special
// file) must end with their call: each sleeps or waits far longer (60 s)
// than the call may last. A call that is still running after sleepBound has
// certainly not been ended by its deadline, whatever the machine's load.
const sleepBound = 30 * time.Second

// callTimeout is the plugin timeout of the tests whose sleeper must time out. It also
// bounds the calls that must not (a fresh instance's start and a short sleep, or the
// C guest's whole run): 300 ms was too little for those under -race on a loaded machine.
const callTimeout = 2 * time.Second

// returnsBefore runs f and fails the test if it has not returned within
// bound (which is then the only thing asserted about time). f runs on
// another goroutine, so it must not call t.Fatal.
func returnsBefore[T any](t *testing.T, bound time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(bound):
		t.Fatalf("still running after %s: the guest's wait was not ended by its call's end", bound)
		panic("unreachable")
	}
}

func TestSleepingGoGuestTimesOutAndTheNextCallGetsAFreshInstance(t *testing.T) {
	p := loadGuest(t, newTestRuntime(t), Permissions{Timeout: callTimeout, Isolation: IsolationPooled}, nil)
	wantResult(t, callTool(t, p, "counter", `{}`), false, "1")
	res := returnsBefore(t, sleepBound, func() callOutcome {
		return outcome(p.InvokeTool(context.Background(), "nap", []byte(`{"text":"60s"}`)))
	}).want(t)
	wantResult(t, res, true, `plugin "guest": nap: timed out after 2s`)
	// The sleeper's instance was discarded: the counter starts again, and a
	// short sleep still sleeps and returns.
	wantResult(t, callTool(t, p, "counter", `{}`), false, "1")
	wantResult(t, callTool(t, p, "nap", `{"text":"1ms"}`), false, "woke")
}

func TestSleepingCGuestTimesOutAndTheNextCallWorks(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "csleep", Wasm: fixtures.csleep, ABI: ABIWASI,
		Permissions: Permissions{Timeout: callTimeout},
		Tools:       []ToolDecl{{Name: "sleep60", Args: []string{"csleep", "60"}}, {Name: "sleep0", Args: []string{"csleep", "0"}}}})
	res := returnsBefore(t, sleepBound, func() callOutcome { return outcome(p.InvokeTool(context.Background(), "sleep60", []byte(`{}`))) }).want(t)
	wantResult(t, res, true, `plugin "csleep": _start: timed out after 2s`)
	wantResult(t, callTool(t, p, "sleep0", `{}`), false, "woke")
}

type callOutcome struct {
	res CallResult
	err error
}

func outcome(res CallResult, err error) callOutcome { return callOutcome{res, err} }

func (o callOutcome) want(t *testing.T) CallResult {
	t.Helper()
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.res
}

// cancelWhenAsleep cancels the returned context as soon as a guest's sleep
// begins.
func cancelWhenAsleep(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	f := func() { cancel() }
	sleepStarted.Store(&f)
	t.Cleanup(func() { sleepStarted.Store(nil); cancel() })
	return ctx
}

func TestCancellingTheCallerEndsASleepingGuest(t *testing.T) {
	r := newTestRuntime(t)
	t.Run("go", func(t *testing.T) {
		p := loadGuest(t, r, Permissions{Timeout: time.Minute}, nil)
		ctx := cancelWhenAsleep(t)
		err := returnsBefore(t, sleepBound, func() error {
			_, err := p.InvokeTool(ctx, "nap", []byte(`{"text":"60s"}`))
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want the caller's cancellation", err)
		}
		sleepStarted.Store(nil)
		wantResult(t, callTool(t, p, "nap", `{"text":"1ms"}`), false, "woke")
	})
	t.Run("c", func(t *testing.T) {
		p := load(t, r, Config{Name: "csleep", Wasm: fixtures.csleep, ABI: ABIWASI, Args: []string{"csleep", "60"},
			Permissions: Permissions{Timeout: time.Minute}})
		ctx := cancelWhenAsleep(t)
		err := returnsBefore(t, sleepBound, func() error {
			_, err := p.InvokeTool(ctx, "csleep", []byte(`{}`))
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want the caller's cancellation", err)
		}
	})
}

// Hooks (permission, guardrail, context plugins) are called with CallExport:
// a sleeping one must fail on time, as a timeout Fault the host can act on.
func TestSleepingHookFailsWithATimeoutFault(t *testing.T) {
	p := loadGuest(t, newTestRuntime(t), Permissions{Timeout: callTimeout}, nil)
	err := returnsBefore(t, sleepBound, func() error {
		_, err := p.CallExport(context.Background(), "nap", []byte("60s"))
		return err
	})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != FaultTimeout || err.Error() != `plugin "guest": nap: timed out after 2s` {
		t.Fatalf("got %v, want a timeout fault", err)
	}
	if out, err := p.CallExport(context.Background(), "nap", []byte("1ms")); err != nil || string(out) != "woke" {
		t.Fatalf("next call: %q %v", out, err)
	}
}

func TestHTTPRequestToAStalledServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answer nothing until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	p := loadGuest(t, newTestRuntime(t), Permissions{Timeout: callTimeout, AllowedHosts: []string{hostPort(t, srv)}}, nil)
	res := returnsBefore(t, sleepBound, func() callOutcome {
		return outcome(p.InvokeTool(context.Background(), "fetch", []byte(`{"url":"`+srv.URL+`"}`)))
	}).want(t)
	wantResult(t, res, true, `plugin "guest": fetch: timed out after 2s`)
}

// A FIFO in a mount would block the guest in open(2) until a writer came; it
// is refused instead, like any file that is neither regular nor a directory.
func TestFIFOInAMountIsRefusedRatherThanWaitedOn(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := loadGuest(t, newTestRuntime(t), Permissions{Timeout: time.Minute, AllowedPaths: map[string]string{dir: "/data"}}, nil)
	res := returnsBefore(t, sleepBound, func() callOutcome {
		return outcome(p.InvokeTool(context.Background(), "read_file", []byte(`{"path":"/data/fifo"}`)))
	}).want(t)
	wantResult(t, res, true, `plugin "guest": read_file: open /data/fifo: Not supported`)
	wantResult(t, callTool(t, p, "read_file", `{"path":"/data/plain.txt"}`), false, "plain")
}
