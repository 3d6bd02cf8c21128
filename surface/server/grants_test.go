package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// finishedOutcome is RUN_FINISHED's outcome type and its interrupts' ids and metadata.
func finishedOutcome(t *testing.T, evs []map[string]any) (string, []map[string]any) {
	t.Helper()
	for _, e := range evs {
		if e["type"] == "RUN_FINISHED" {
			o, _ := e["outcome"].(map[string]any)
			var ints []map[string]any
			list, _ := o["interrupts"].([]any)
			for _, i := range list {
				ints = append(ints, i.(map[string]any))
			}
			typ, _ := o["type"].(string)
			return typ, ints
		}
	}
	t.Fatalf("no RUN_FINISHED in %v", brief(evs))
	return "", nil
}

// Over HTTP through the host's door: an interrupt names the hash of the arguments it
// asks about and when it expires; the resume "allow calc for this session" runs the
// call and the next calc call without asking; GET /v1/approvals/grants lists the
// grant, DELETE revokes it (404 the second time), and the next calc call asks again.
func TestHTTP_ASessionGrantIsGivenListedAndRevoked(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"text": "{{result c1}} {{result c2}}"},
	  {"tool_calls": [{"id": "c3", "name": "calc", "arguments": "{\"expression\":\"3+3\"}"}]}]}`, `require_approval = ["calc"]`, false)
	h, err := host.Open(context.Background(), host.Options{Manifest: m, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Runner(), Store: h.Store, Door: h.Door(), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
		ts.Close()
		_ = h.Close()
	})
	e := &testEnv{srv: srv, ts: ts, token: "tok"}

	typ, ints := finishedOutcome(t, e.run(t, runBody("s", "r1", "go")))
	if typ != "interrupt" || len(ints) != 1 || ints[0]["id"] != "c1" {
		t.Fatalf("first run: %s %v", typ, ints)
	}
	md, _ := ints[0]["metadata"].(map[string]any)
	if h, _ := md["argsHash"].(string); !strings.HasPrefix(h, "sha256:") || md["expiresAt"] == nil {
		t.Fatalf("interrupt metadata %v: want argsHash and expiresAt", md)
	}
	evs := e.run(t, resumeBody("s", "r2", "c1", `{"approved": true, "scope": "session", "args_hash": "`+md["argsHash"].(string)+`"}`))
	if typ, ints := finishedOutcome(t, evs); typ != "success" {
		t.Fatalf("resume: %s %v %v", typ, ints, brief(evs))
	}

	code, body := e.request(t, "GET", "/v1/approvals/grants", "")
	var out struct {
		Grants []struct{ ID, Scope, Session, Tool string }
	}
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out.Grants) != 1 {
		t.Fatalf("GET grants: %d %s", code, body)
	}
	g := out.Grants[0]
	if g.Scope != "session" || g.Session != "s" || g.Tool != "calc" {
		t.Fatalf("grant %+v", g)
	}
	if code, body := e.request(t, "DELETE", "/v1/approvals/grants/"+g.ID, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _ := e.request(t, "DELETE", "/v1/approvals/grants/"+g.ID, ""); code != http.StatusNotFound {
		t.Fatalf("DELETE again: %d", code)
	}
	typ, ints = finishedOutcome(t, e.run(t, runBody("s", "r3", "again")))
	if typ != "interrupt" || len(ints) != 1 || ints[0]["id"] != "c3" {
		t.Fatalf("after the revoke: %s %v", typ, ints)
	}
}
