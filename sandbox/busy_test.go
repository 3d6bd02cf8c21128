package sandbox

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// A call's timeout bounds the whole call, the wait for one of the plugin's
// instances included (issue 29: a trivial call waited 19 s behind spinning
// calls). A call that gets no instance in time answers "busy".

// busyBound is how long a call that must give up waiting may take: far more
// than the deadlines below, far less than the calls holding the instances.
const busyBound = 15 * time.Second

// waitUntil polls cond until it holds or the bound passes.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %s", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *pool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy
}

var busyText = regexp.MustCompile(`^plugin "guest": greet: busy: all 1 instances in use for \d+ms$`)

func TestCallBehindASpinningCallAnswersBusyAtItsDeadlineBeforeTheSpinnerEnds(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, PoolSize: 1,
		Permissions: Permissions{Timeout: time.Minute, Isolation: IsolationPooled},
		Tools:       tools(map[string]string{"greet": "text", "spin": ""})})
	spinCtx, stopSpinning := context.WithCancel(context.Background())
	defer stopSpinning()
	spun := make(chan callOutcome, 1)
	go func() { spun <- outcome(p.InvokeTool(spinCtx, "spin", []byte(`{}`))) }()
	waitUntil(t, busyBound, "holding the instance", func() bool { return p.pool.inUse() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := returnsBefore(t, busyBound, func() callOutcome { return outcome(p.InvokeTool(ctx, "greet", []byte(`{"text":"x"}`))) }).want(t)
	if !res.IsError || !busyText.MatchString(res.Text()) {
		t.Fatalf("got %+v, want a busy error result", res)
	}
	select {
	case o := <-spun:
		t.Fatalf("the spinning call ended first (%+v %v): the test proves nothing", o.res, o.err)
	default:
	}

	// The spinner ends with its caller; the instance it held is discarded
	// and the next call gets a fresh one.
	stopSpinning()
	returnsBefore(t, busyBound, func() callOutcome { return <-spun })
	wantResult(t, callTool(t, p, "greet", `{"text":"x"}`), false, "Hello, x!")
}

func TestPluginTimeoutBoundsTheWaitForAnInstance(t *testing.T) {
	// 2 s: the timeout also bounds the last call, which must succeed on a busy machine.
	p := load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, PoolSize: 1,
		Permissions: Permissions{Timeout: 2 * time.Second, Isolation: IsolationPooled},
		Tools:       tools(map[string]string{"greet": "text"})})
	// The only instance is taken and not given back within the timeout,
	// as by a call stuck where the deadline cannot reach it (an instance's
	// start section, SECURITY.md "Not defended").
	in, err := p.pool.acquire(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	res := returnsBefore(t, busyBound, func() callOutcome {
		return outcome(p.InvokeTool(context.Background(), "greet", []byte(`{"text":"x"}`)))
	}).want(t)
	wantResult(t, res, true, `plugin "guest": greet: busy: all 1 instances in use for 2s`)
	p.pool.release(context.Background(), in, true)
	wantResult(t, callTool(t, p, "greet", `{"text":"x"}`), false, "Hello, x!")
}

func TestWASICallBehindASleepingCommandAnswersBusyAtItsDeadline(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "csleep", Wasm: fixtures.csleep, ABI: ABIWASI, PoolSize: 1,
		Permissions: Permissions{Timeout: time.Minute},
		Tools:       []ToolDecl{{Name: "sleep60", Args: []string{"csleep", "60"}}, {Name: "sleep0", Args: []string{"csleep", "0"}}}})
	sleepCtx, wake := context.WithCancel(context.Background())
	defer wake()
	slept := make(chan callOutcome, 1)
	go func() { slept <- outcome(p.InvokeTool(sleepCtx, "sleep60", []byte(`{}`))) }()
	waitUntil(t, busyBound, "holding the slot", func() bool { return len(p.abi.(*wasiABI).slots) == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := returnsBefore(t, busyBound, func() callOutcome { return outcome(p.InvokeTool(ctx, "sleep0", []byte(`{}`))) }).want(t)
	if want := regexp.MustCompile(`^plugin "csleep": _start: busy: all 1 instances in use for \d+ms$`); !res.IsError || !want.MatchString(res.Text()) {
		t.Fatalf("got %+v, want a busy error result", res)
	}
	wake()
	returnsBefore(t, busyBound, func() callOutcome { return <-slept })
	wantResult(t, callTool(t, p, "sleep0", `{}`), false, "woke")
}

// An admitted run's call (WaitForInstance, issue 47) waits for an instance as long as
// its context allows, past the plugin's timeout, and then runs: it is not refused as
// busy because other calls were ahead of it.
func TestAdmittedCallWaitsForAnInstancePastThePluginTimeout(t *testing.T) {
	// The timeout also bounds the call once it has its instance, which must succeed on a
	// busy machine: 2 s, not a fraction of one (the test waits 3 of them).
	const timeout = 2 * time.Second
	p := load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, PoolSize: 1,
		Permissions: Permissions{Timeout: timeout, Isolation: IsolationPooled},
		Tools:       tools(map[string]string{"greet": "text"})})
	in, err := p.pool.acquire(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	done := make(chan callOutcome, 1)
	go func() { done <- outcome(p.InvokeTool(WaitForInstance(ctx), "greet", []byte(`{"text":"x"}`))) }()
	// Hold the instance for well past the plugin's timeout: a call the timeout
	// bounded would have answered busy by then.
	waitUntil(t, busyBound, "past the plugin's timeout", func() bool {
		select {
		case o := <-done:
			t.Fatalf("the admitted call returned while every instance was taken: %+v %v", o.res, o.err)
		default:
		}
		return time.Since(start) > 3*timeout
	})
	p.pool.release(context.Background(), in, true)
	wantResult(t, returnsBefore(t, busyBound, func() callOutcome { return <-done }).want(t), false, "Hello, x!")
}

// An admitted call whose own deadline passes while it waits answers busy then.
func TestAdmittedCallAnswersBusyWhenItsOwnDeadlinePasses(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, PoolSize: 1,
		Permissions: Permissions{Timeout: time.Minute, Isolation: IsolationPooled},
		Tools:       tools(map[string]string{"greet": "text"})})
	in, err := p.pool.acquire(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.pool.release(context.Background(), in, true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := returnsBefore(t, busyBound, func() callOutcome {
		return outcome(p.InvokeTool(WaitForInstance(ctx), "greet", []byte(`{"text":"x"}`)))
	}).want(t)
	if !res.IsError || !busyText.MatchString(res.Text()) {
		t.Fatalf("got %+v, want a busy error result", res)
	}
}
