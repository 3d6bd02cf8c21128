package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Feedback given over HTTP and with `sessions feedback` shows in /metrics and in
// `insights`, beside the runs' outcomes, the tools' calls and the commonest failure with
// its example run.
func TestE2E_FeedbackThroughHTTPAndCLIShowsInMetricsAndInsights(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"text": "two"},
	  {"error": {"kind": "auth", "message": "bad key"}}]}`})
	s := e.serve(t)
	for _, run := range [][2]string{{"t1", "r1"}, {"t2", "r2"}} {
		resp := s.postRun(t, run[0], run[1], "1+1?")
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Post(s.base+"/v1/sessions/t1/runs/r1/feedback", "application/json", strings.NewReader(`{"score": 1, "comment": "right"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"agent":"e2e"`) {
		t.Fatalf("feedback: %d %s", resp.StatusCode, body)
	}
	if r := e.agenthost(t, "sessions", "feedback", "t2", "r2", "--score", "-1", "--comment", "it failed"); r.code != 0 ||
		strings.TrimSpace(r.stdout) != "feedback -1 on t2/r2 (e2e) recorded" {
		t.Fatalf("sessions feedback: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "feedback", "t2", "nope", "--score", "1"); r.code != 2 || !strings.Contains(r.stderr, `session "t2" has no run "nope"`) {
		t.Fatalf("feedback on no run: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "feedback", "t2", "r2", "--score", "6"); r.code != 2 || !strings.Contains(r.stderr, "score 6") {
		t.Fatalf("feedback score 6: exit %d %s", r.code, r.stderr)
	}

	mresp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if m := regexp.MustCompile(`(?m)^agenthost_feedback_total\{agent="e2e",score="1"\} (\S+)$`).FindStringSubmatch(string(metrics)); m == nil || m[1] != "1" {
		t.Fatalf("no agenthost_feedback_total{agent=e2e,score=1} 1 in /metrics:\n%s", metrics)
	}

	r := e.agenthost(t, "insights", "--json")
	if r.code != 0 {
		t.Fatalf("insights: exit %d %s", r.code, r.stderr)
	}
	var rep struct {
		Runs     int `json:"runs"`
		Outcomes []struct {
			Status, Reason string
			Runs           int
		} `json:"outcomes"`
		Tools []struct {
			Name   string
			Calls  int
			Errors int
		} `json:"tools"`
		Feedback []struct {
			Agent     string
			Count     int
			MeanScore float64 `json:"mean_score"`
			Up        int     `json:"thumbs_up"`
			Down      int     `json:"thumbs_down"`
		} `json:"feedback"`
		Failures []struct {
			Status, Reason, Message string
			Runs                    int
			Examples                []struct{ Session, Run string }
		} `json:"failures"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("insights --json: %v\n%s", err, r.stdout)
	}
	if rep.Runs != 2 || len(rep.Outcomes) != 2 || len(rep.Tools) != 1 || rep.Tools[0].Name != "calc" || rep.Tools[0].Calls != 1 ||
		len(rep.Feedback) != 1 || rep.Feedback[0].Agent != "e2e" || rep.Feedback[0].Count != 2 || rep.Feedback[0].MeanScore != 0 ||
		rep.Feedback[0].Up != 1 || rep.Feedback[0].Down != 1 || len(rep.Failures) != 1 || rep.Failures[0].Status != "failed" ||
		!strings.Contains(rep.Failures[0].Message, "bad key") || len(rep.Failures[0].Examples) != 1 ||
		rep.Failures[0].Examples[0].Session != "t2" || rep.Failures[0].Examples[0].Run != "r2" {
		t.Fatalf("insights: %+v\n%s", rep, r.stdout)
	}
	r = e.agenthost(t, "insights")
	if r.code != 0 || !strings.Contains(r.stdout, "2 runs in the last 7d") || !strings.Contains(r.stdout, "Commonest failures:") ||
		!strings.Contains(r.stdout, "(e.g. t2/r2)") {
		t.Fatalf("insights: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = e.agenthost(t, "insights", "--since", "0d"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Fatalf("insights --since 0d: exit %d %s", r.code, r.stderr)
	}
}
