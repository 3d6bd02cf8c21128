package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/store"
)

// The memory routes add, list, search and delete memories in the store's database; a
// search for one user never returns another's; what a client may send wrong is refused
// with what is wrong.
func TestMemoryRoutesKeepUsersApartAndRefuseBadRequests(t *testing.T) {
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newTestEnv(t, envOptions{store: st})
	var ana memory.Entry
	code, body := e.request(t, "POST", "/v1/memory", `{"user": "ana", "text": "Ana drinks genmaicha", "metadata": {"via": "test"}}`)
	if code != 201 || json.Unmarshal([]byte(body), &ana) != nil || ana.User != "ana" || ana.Kind != memory.KindFact || ana.Metadata["via"] != "test" {
		t.Fatalf("add: %d %s", code, body)
	}
	e.request(t, "POST", "/v1/memory", `{"user": "bob", "text": "Bob drinks genmaicha"}`)
	for _, c := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/v1/memory", `{"text": "nobody's"}`, 400, "belongs to a user, an agent or both"},
		{"POST", "/v1/memory", `{"user": "ana", "text": "` + strings.Repeat("x", memory.MaxText+1) + `"}`, 400, "longer than 4096"},
		{"POST", "/v1/memory", `{"user": "ana", "kind": "secret", "text": "x"}`, 400, `unknown kind \"secret\"`},
		{"POST", "/v1/memory", `{"user": "a\u0007", "text": "x"}`, 400, "control character"},
		{"GET", "/v1/memory", "", 400, "user (or agent"},
		{"GET", "/v1/memory?user=ana&limit=0", "", 400, "limit \\\"0\\\": want 1 to 1000"},
		{"GET", "/v1/memory?user=ana&kind=x", "", 400, "want fact or preference"},
		{"DELETE", "/v1/memory", "", 400, "user (or agent"},
		{"DELETE", "/v1/memory/" + ana.ID + "?user=bob", "", 404, "no memory"},
	} {
		code, body := e.request(t, c.method, c.path, c.body)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Fatalf("%s %s %.40s: %d %s, want %d %q", c.method, c.path, c.body, code, body, c.code, c.msg)
		}
	}
	var hits []memory.Hit
	code, body = e.request(t, "GET", `/v1/memory?user=ana&q=genmaicha%22%20OR%20bob`, "")
	if code != 200 || json.Unmarshal([]byte(body), &hits) != nil || len(hits) != 1 || hits[0].Text != "Ana drinks genmaicha" {
		t.Fatalf("search: %d %s", code, body)
	}
	if code, body := e.request(t, "DELETE", "/v1/memory/"+ana.ID, ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := e.request(t, "DELETE", "/v1/memory?user=bob", ""); code != 200 || body != `{"deleted":1}`+"\n" {
		t.Fatalf("erase bob: %d %q", code, body)
	}
	if code, body := e.request(t, "GET", "/v1/memory?user=bob", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("bob after erase: %d %s", code, body)
	}
	// The in-process store keeps no memories (the host keeps its own then): 501.
	if code, _ := newTestEnv(t, envOptions{}).request(t, "GET", "/v1/memory?user=ana", ""); code != 501 {
		t.Fatalf("memory store: %d, want 501", code)
	}
}

// forwardedProps.user names the run's user: run_started records it, and a name the
// loop refuses is the request's error.
func TestForwardedUserIsTheRunsUser(t *testing.T) {
	e := newTestEnv(t, envOptions{}, turn{text: "Done."})
	body := strings.TrimSuffix(runBody("s1", "r1", "hi"), "}") + `,"forwardedProps":{"user":"ana"}}`
	if code, out := e.request(t, "POST", "/v1/runs", body); code != 200 {
		t.Fatalf("run: %d %s", code, out)
	}
	if code, out := e.request(t, "GET", "/v1/sessions/s1/runs/r1/events", ""); code != 200 || !strings.Contains(out, `"type":"run_started","data":{"model":"fake","user":"ana"}`) {
		t.Fatalf("events: %d %s", code, out)
	}
	body = strings.TrimSuffix(runBody("s2", "r1", "hi"), "}") + `,"forwardedProps":{"user":"a\u0000b"}}`
	if code, out := e.request(t, "POST", "/v1/runs", body); code != 400 || !strings.Contains(out, "control character") {
		t.Fatalf("a user with NUL: %d %s", code, out)
	}
}

// A memory deletion through the API is recorded in the audit log, which GET /v1/audit
// returns verified; bad paging parameters are refused.
func TestMemoryDeletionsAreAuditedAndTheLogIsServedVerified(t *testing.T) {
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newTestEnv(t, envOptions{store: st, audit: func(ctx context.Context, r audit.Record) error {
		r.Time = time.Now()
		_, err := st.AppendAudit(ctx, r)
		return err
	}})
	e.request(t, "POST", "/v1/memory", `{"user": "ana", "text": "one"}`)
	e.request(t, "POST", "/v1/memory", `{"user": "ana", "text": "two"}`)
	if code, body := e.request(t, "DELETE", "/v1/memory?user=ana", ""); code != 200 || !strings.Contains(body, `"deleted":2`) {
		t.Fatalf("erase: %d %s", code, body)
	}
	var got struct {
		Records  []audit.Record `json:"records"`
		Verified bool           `json:"verified"`
	}
	code, body := e.request(t, "GET", "/v1/audit", "")
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || !got.Verified || len(got.Records) != 2 || got.Records[0].Action != audit.ActionGenesis {
		t.Fatalf("audit: %d %s", code, body)
	}
	if r := got.Records[1]; r.Action != audit.ActionMemoryDelete || r.Actor != "anonymous" || r.Target != "user:ana agent:" || r.Detail["deleted"] != "2" {
		t.Fatalf("record = %+v", r)
	}
	for _, q := range []string{"?after=-1", "?after=x", "?limit=0", "?limit=10001"} {
		if code, _ := e.request(t, "GET", "/v1/audit"+q, ""); code != 400 {
			t.Fatalf("GET /v1/audit%s: %d", q, code)
		}
	}
}
