package host

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// fakeModel answers each call with the next scripted outcome: an error before any
// event, or a text answer with usage.
type fakeModel struct {
	mu    sync.Mutex
	calls int
	fails []error // one per call; nil (or past the end) answers
}

func (m *fakeModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if i := m.calls - 1; i < len(m.fails) && m.fails[i] != nil {
		return &deltaStream{err: m.fails[i]}, nil
	}
	return &deltaStream{deltas: []loop.Delta{
		{Seq: 1, Kind: loop.DeltaText, Text: "answer"},
		{Seq: 2, Kind: loop.DeltaUsage, Usage: &loop.Usage{PromptTokens: 1000000, CompletionTokens: 1000000}},
		{Seq: 3, Kind: loop.DeltaFinish, StopReason: "end_turn"}}}, nil
}

type deltaStream struct {
	deltas []loop.Delta
	err    error
}

func (s *deltaStream) Recv() (loop.Delta, error) {
	if len(s.deltas) == 0 {
		if s.err != nil {
			return loop.Delta{}, s.err
		}
		return loop.Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}
func (s *deltaStream) Close() error { return nil }

var (
	overloaded = &loop.ModelError{Kind: loop.KindOverloaded, Message: "HTTP 500", Retryable: true}
	badKey     = &loop.ModelError{Kind: loop.KindAuth, Message: "invalid key"}
)

func chainOf(links ...*link) *chainModel {
	return &chainModel{links: links, retry: withRetryDefaults(loop.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}),
		sleep: func(context.Context, time.Duration) error { return nil }}
}

func newLink(name string, m loop.Model) *link {
	return &link{name: name, model: m, breaker: newBreaker(name, 3, time.Minute)}
}

// drain reads a stream to its end and returns the usage it reported.
func drain(t *testing.T, st loop.Stream) loop.Usage {
	t.Helper()
	var u loop.Usage
	for {
		d, err := st.Recv()
		if err == io.EOF {
			return u
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Usage != nil {
			u = *d.Usage
		}
	}
}

func TestFallbackNonRetryableErrorGoesToTheNextProviderAtOnce(t *testing.T) {
	primary, second := &fakeModel{fails: []error{badKey}}, &fakeModel{}
	b := newLink("b", second)
	b.pricing = &loop.Pricing{PromptPerMTok: 3, CompletionPerMTok: 15}
	c := chainOf(newLink("a", primary), b)
	st, err := c.Stream(context.Background(), loop.Request{})
	if err != nil {
		t.Fatal(err)
	}
	u := drain(t, st)
	if primary.calls != 1 || second.calls != 1 {
		t.Fatalf("calls: primary %d, second %d", primary.calls, second.calls)
	}
	if u.Provider != "b" || u.CostUSD != 18 {
		t.Fatalf("usage %+v: want provider b priced at its own rates", u)
	}
}

func TestFallbackRetriesARetryableErrorBeforeMovingOn(t *testing.T) {
	primary, second := &fakeModel{fails: []error{overloaded, overloaded}}, &fakeModel{}
	c := chainOf(newLink("a", primary), newLink("b", second))
	st, err := c.Stream(context.Background(), loop.Request{})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, st)
	if primary.calls != 2 || second.calls != 1 { // MaxAttempts 2 on a, then b
		t.Fatalf("calls: primary %d, second %d", primary.calls, second.calls)
	}
}

func TestFallbackEveryProviderFailedIsNotRetriedByTheLoop(t *testing.T) {
	c := chainOf(newLink("a", &fakeModel{fails: []error{badKey}}), newLink("b", &fakeModel{fails: []error{overloaded, overloaded}}))
	_, err := c.Stream(context.Background(), loop.Request{})
	var me *loop.ModelError
	if !errors.As(err, &me) || me.Retryable || !strings.HasPrefix(me.Message, "every provider failed; the last: HTTP 500") {
		t.Fatalf("err %v", err)
	}
}

func TestSingleProviderKeepsTheLoopsRetries(t *testing.T) {
	m := &fakeModel{fails: []error{overloaded}}
	c := chainOf(newLink("a", m))
	_, err := c.Stream(context.Background(), loop.Request{})
	if err != overloaded || m.calls != 1 {
		t.Fatalf("err %v after %d calls: one provider must fail as it is, once, for the loop to retry", err, m.calls)
	}
}

func TestBreakerOpensSkipsHalfOpensAndCloses(t *testing.T) {
	now := time.Unix(1000, 0)
	primary, second := &fakeModel{fails: []error{badKey, badKey, badKey}}, &fakeModel{}
	a := newLink("a", primary)
	a.breaker.now = func() time.Time { return now }
	c := chainOf(a, newLink("b", second))
	call := func() {
		t.Helper()
		st, err := c.Stream(context.Background(), loop.Request{})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, st)
	}
	for range 3 { // three failures open it (threshold 3)
		call()
	}
	if a.breaker.state != "open" || primary.calls != 3 {
		t.Fatalf("state %s after %d calls", a.breaker.state, primary.calls)
	}
	call() // skipped while open
	if primary.calls != 3 || second.calls != 4 {
		t.Fatalf("an open breaker let a call through: primary %d", primary.calls)
	}
	now = now.Add(time.Minute) // the cool-down passes: one probe
	call()
	if primary.calls != 4 || a.breaker.state != "closed" {
		t.Fatalf("probe: primary %d calls, state %s", primary.calls, a.breaker.state)
	}
}

func TestBreakerFailedProbeOpensAgain(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBreaker("p", 1, 10*time.Second)
	b.now = func() time.Time { return now }
	ctx := context.Background()
	b.failure(ctx, badKey)
	if b.allow(ctx) || b.remaining() != 10*time.Second {
		t.Fatalf("open: allow, remaining %s", b.remaining())
	}
	now = now.Add(10 * time.Second)
	if !b.allow(ctx) || b.allow(ctx) {
		t.Fatal("half open must let exactly one probe through")
	}
	b.failure(ctx, badKey)
	if b.state != "open" || b.remaining() != 10*time.Second {
		t.Fatalf("after a failed probe: %s, %s", b.state, b.remaining())
	}
}

func TestRateLimitsSpaceCallsAsConfigured(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLimiter(60, 600) // one request a second; 600 tokens a minute
	if d := l.delayAt(t0, 100); d != 0 {
		t.Fatalf("first call waits %s", d)
	}
	l.requests.ReserveN(t0, 1)
	l.tokens.ReserveN(t0, 600)
	if d := l.delayAt(t0, 1); d != time.Second {
		t.Fatalf("second request waits %s, want 1s (60 a minute)", d)
	}
	if d := l.delayAt(t0.Add(time.Second), 60); d != 6*time.Second-time.Second {
		t.Fatalf("60 tokens after the bucket emptied wait %s, want 5s more (10 tokens a second)", d)
	}
	if newLimiter(0, 0) != nil {
		t.Fatal("no limits must cost nothing")
	}
}

// BenchmarkRateLimitedCalls measures the call rate through a limited provider; with
// requests_per_minute = 6000 it settles near 100 calls/s whatever the machine.
func BenchmarkRateLimitedCalls(b *testing.B) {
	c := chainOf(&link{name: "a", model: &fakeModel{}, breaker: newBreaker("a", 0, 0), limits: newLimiter(6000, 0)})
	start := time.Now()
	for b.Loop() {
		st, err := c.Stream(context.Background(), loop.Request{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
