package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Feedback on a stored run is kept with the agent that ran it, as given; what a client
// may send wrong is refused with what is wrong, and nothing is stored for it.
func TestFeedbackOnAStoredRunIsKeptAndHostileBodiesAreRefused(t *testing.T) {
	e := newTestEnv(t, envOptions{}, turn{text: "Done."})
	if code, body := e.request(t, "POST", "/v1/runs", runBody("s1", "r1", "hi")); code != 200 {
		t.Fatalf("run: %d %s", code, body)
	}
	for _, c := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": 7}`, 400, "score 7: want -1 (thumbs down), 1 (thumbs up) or a rating from 0 to 5"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": -2}`, 400, "score -2"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": 1.5}`, 400, "malformed JSON"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": 99999999999999999999}`, 400, "malformed JSON"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"comment": "no score"}`, 400, "score is required"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": 1, "comment": "` + strings.Repeat("x", loop.MaxFeedbackComment+1) + `"}`, 400, "comment of 4097 bytes: at most 4096"},
		{"/v1/sessions/s1/runs/r1/feedback", `{"score": 1`, 400, "malformed JSON"},
		{"/v1/sessions/s1/runs/nope/feedback", `{"score": 1}`, 404, `session \"s1\" has no run \"nope\"`},
		{"/v1/sessions/s2/runs/r1/feedback", `{"score": 1}`, 404, `session \"s2\" has no run \"r1\"`},
	} {
		code, body := e.request(t, "POST", c.path, c.body)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Fatalf("%s %.60s: %d %s, want %d %q", c.path, c.body, code, body, c.code, c.msg)
		}
	}
	fs := e.store.(loop.FeedbackStore)
	if got, _ := fs.Feedback(context.Background(), time.Time{}); len(got) != 0 {
		t.Fatalf("refused feedback was stored: %+v", got)
	}
	code, body := e.request(t, "POST", "/v1/sessions/s1/runs/r1/feedback", `{"score": -1, "comment": "wrong ✗"}`)
	if code != 201 || !strings.Contains(body, `"agent":"test"`) || !strings.Contains(body, `"score":-1`) {
		t.Fatalf("feedback: %d %s", code, body)
	}
	got, err := fs.Feedback(context.Background(), time.Time{})
	if err != nil || len(got) != 1 || got[0].SessionID != "s1" || got[0].RunID != "r1" || got[0].Agent != "test" ||
		got[0].Score != -1 || got[0].Comment != "wrong ✗" || time.Since(got[0].Time) > time.Hour {
		t.Fatalf("stored %+v %v", got, err)
	}
}

// GET /v1/insights sums up the stored runs and their feedback, as `agenthost insights`
// does; a window that is not one is a 400.
func TestInsightsRouteSumsTheStoredRunsAndFeedback(t *testing.T) {
	e := newTestEnv(t, envOptions{}, turn{text: "Done."})
	for _, run := range []string{"r1", "r2"} {
		if code, body := e.request(t, "POST", "/v1/runs", runBody("s-"+run, run, "hi")); code != 200 {
			t.Fatalf("run: %d %s", code, body)
		}
	}
	if code, body := e.request(t, "POST", "/v1/sessions/s-r1/runs/r1/feedback", `{"score": 5}`); code != 201 {
		t.Fatalf("feedback: %d %s", code, body)
	}
	code, body := e.request(t, "GET", "/v1/insights?since=1d", "")
	if code != 200 || !strings.Contains(body, `"runs":2`) || !strings.Contains(body, `"agent":"test","count":1,"mean_score":5`) ||
		!strings.Contains(body, `{"status":"completed","reason":"end_turn","runs":2,"cost_usd":0}`) {
		t.Fatalf("insights: %d %s", code, body)
	}
	for _, bad := range []string{"0d", "-1h", "week", "99999999d"} {
		if code, body := e.request(t, "GET", "/v1/insights?since="+bad, ""); code != 400 || !strings.Contains(body, "since") {
			t.Fatalf("since=%s: %d %s", bad, code, body)
		}
	}
}
