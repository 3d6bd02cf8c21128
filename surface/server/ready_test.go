package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// GET /readyz is 200 while the node takes runs, 503 with the reason when Options.Ready
// fails (its store does not answer) and once it drains, when POST /v1/runs is refused
// with 503 and Retry-After too; /healthz stays 200 throughout.
func TestReadyzFailsWhenNotReadyOrDrainingAndDrainingRefusesRunsWithRetryAfter(t *testing.T) {
	var failing error
	s, err := New(Options{Agent: noRunner{}, Store: loop.NewMemoryStore(), Ready: func(context.Context) error { return failing }})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil)
		s.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"ready":true`) {
		t.Fatalf("ready node: %d %s", code, body)
	}
	failing = errors.New("the session store (postgres) does not answer")
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "does not answer") {
		t.Fatalf("store down: %d %s", code, body)
	}
	failing = nil
	s.BeginDrain()
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, `"reason":"draining"`) {
		t.Fatalf("draining: %d %s", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz while draining: %d", code)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/runs", strings.NewReader(runBody("s1", "r1", "hi")))
	r.Header.Set("Content-Type", "application/json")
	s.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "shutting down") {
		t.Fatalf("a run while draining: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
}
