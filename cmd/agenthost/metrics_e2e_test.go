package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serve's /metrics, scraped after a load of runs, counts exactly those runs, their
// model and tool calls and their tokens; an incoming traceparent continues in the run.
func TestE2E_MetricsCountTheRunsAndTraceparentIsContinued(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
	  {"text": "two", "usage": {"prompt_tokens": 20, "completion_tokens": 1}}]}`})
	s := e.serve(t, "--log-format", "json")
	const runs = 5
	for i := range runs {
		resp := s.postRun(t, fmt.Sprintf("t%d", i), fmt.Sprintf("r%d", i), "1+1?")
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	value := func(pattern string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + pattern + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in /metrics:\n%s", pattern, text)
		}
		return m[1]
	}
	for pattern, want := range map[string]string{
		`agenthost_runs_total\{reason="end_turn",status="completed"\}`:         "5",
		`agenthost_model_calls_total\{outcome="ok",provider="scripted"\}`:      "10",
		`agenthost_tool_calls_total\{outcome="ok",plugin="calc",tool="calc"\}`: "5",
		`agenthost_tokens_total\{type="prompt"\}`:                              "150",
		`agenthost_tokens_total\{type="completion"\}`:                          "30",
		`agenthost_run_duration_seconds_count\{status="completed"\}`:           "5",
		`agenthost_model_time_to_first_token_seconds_count`:                    "10",
		`agenthost_tool_duration_seconds_count\{plugin="calc",tool="calc"\}`:   "5",
	} {
		if got := value(pattern); got != want {
			t.Errorf("%s = %s, want %s", pattern, got, want)
		}
	}

	// traceparent: the run's trace is the caller's.
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest("POST", s.base+"/v1/runs", strings.NewReader(`{"threadId":"tp","runId":"rtp","messages":[{"id":"m","role":"user","content":"1+1?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", parent)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	// The request's own log line is written when its handler returns, which may be just
	// after the client has read the end of the stream: wait for it (a hang guard).
	log := s.log()
	for deadline := time.Now().Add(readyBound); !strings.Contains(log, `"span_id":"b7ad6b7169203331"`) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		log = s.log()
	}
	for _, want := range []string{`"msg":"http request","method":"POST","path":"/v1/runs","status":200`,
		`"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"`,
		`"msg":"run finished","session":"tp","run":"rtp","status":"completed"`,
		`"cost_usd":0,"trace_id":"0af7651916cd43dd8448eb211c80319c"}`} {
		if !strings.Contains(log, want) {
			t.Errorf("serve log lacks %s:\n%s", want, log)
		}
	}
}
