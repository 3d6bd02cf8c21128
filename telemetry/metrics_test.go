package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

func scrape(t *testing.T, tel *Telemetry) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok && strings.HasPrefix(name, "agenthost_") {
			out[name] = v
		}
	}
	return out
}

// Events feed tokens, cost and retries; the tool and model wrappers feed calls and
// timeouts: each lands in the metric README.md names, with the exact count.
func TestMetricsFromEventsAndCalls(t *testing.T) {
	tel, err := New(context.Background(), Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	in := loop.RunInput{}
	ctx, end := tel.StartRun(context.Background(), "a", &in)
	tel.Observe(ctx, loop.Event{Data: &loop.Usage{PromptTokens: 100, CompletionTokens: 7, CostUSD: 0.25}})
	tel.Observe(ctx, loop.Event{Data: &loop.ErrorData{Kind: "rate_limit", Retryable: true}})
	tel.Observe(ctx, loop.Event{Data: &loop.ErrorData{Kind: "auth"}})
	_, done := ToolSpan(ctx, "fetch", "web", "{}")
	done(loop.ErrorResult("Error: tool 'fetch' timed out after 5s"), nil)
	_, done = ToolSpan(ctx, "fetch", "web", "{}")
	done(loop.ToolResult{}, context.DeadlineExceeded)
	tm := WrapModel(failingModel{}, "p", "m")
	tm.Stream(ctx, loop.Request{})
	end(loop.RunResult{Status: loop.StatusFailed, Reason: loop.ReasonError})
	got := scrape(t, tel)
	for name, want := range map[string]string{
		`agenthost_tokens_total{type="prompt"}`:                                 "100",
		`agenthost_tokens_total{type="completion"}`:                             "7",
		`agenthost_cost_USD_total`:                                              "0.25",
		`agenthost_retries_total`:                                               "1",
		`agenthost_tool_calls_total{outcome="error",plugin="web",tool="fetch"}`: "2",
		`agenthost_timeouts_total{where="tool"}`:                                "2",
		`agenthost_timeouts_total{where="model"}`:                               "1",
		`agenthost_model_calls_total{outcome="error",provider="p"}`:             "1",
		`agenthost_runs_total{reason="error",status="failed"}`:                  "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %s", name, got[name], want)
		}
	}
}

type failingModel struct{}

func (failingModel) Stream(context.Context, loop.Request) (loop.Stream, error) {
	return nil, errors.New("provider: no event within first_token_timeout (1s)")
}
