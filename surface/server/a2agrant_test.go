package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// Over A2A 1.0 against a real host: the reply to a task waiting for calc's approval
// carries a data part {"approved": true, "scope": "session"}; the call runs, the grant
// is the one GET /v1/approvals/grants lists for the A2A context's session, and the next
// message's calc call in that context runs without the task asking again.
func TestA2AAnswerWithADataPartGivesASessionGrant(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]}, {"text": "got {{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]}, {"text": "got {{result c2}}"}]}`, `require_approval = ["calc"]`, false)
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
	send := func(message string) (id, state, text string) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+message+`}}`))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Result struct {
				Task struct {
					ID     string
					Status struct {
						State   string
						Message struct{ Parts []struct{ Text string } }
					}
				}
			}
		}
		if err := json.Unmarshal(b, &out); err != nil || out.Result.Task.ID == "" {
			t.Fatalf("SendMessage: %d %s", resp.StatusCode, b)
		}
		task := out.Result.Task
		for _, p := range task.Status.Message.Parts {
			text += p.Text
		}
		return task.ID, task.Status.State, text
	}
	id, state, _ := send(`{"messageId":"m1","role":"ROLE_USER","contextId":"ctx-1","parts":[{"text":"go"}]}`)
	if state != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("first message: %s", state)
	}
	_, state, text := send(`{"messageId":"m2","role":"ROLE_USER","contextId":"ctx-1","taskId":"` + id + `","parts":[{"data":{"approved":true,"scope":"session"}}]}`)
	if state != "TASK_STATE_COMPLETED" || text != "got 2" {
		t.Fatalf("the answer: %s %q", state, text)
	}
	e := &testEnv{ts: ts, token: "tok"}
	code, body := e.request(t, "GET", "/v1/approvals/grants", "")
	var out struct {
		Grants []struct{ Scope, Session, Tool string }
	}
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out.Grants) != 1 ||
		out.Grants[0].Scope != "session" || out.Grants[0].Session != "a2a-ctx-1" || out.Grants[0].Tool != "calc" {
		t.Fatalf("grants: %d %s", code, body)
	}
	if _, state, text := send(`{"messageId":"m3","role":"ROLE_USER","contextId":"ctx-1","parts":[{"text":"again"}]}`); state != "TASK_STATE_COMPLETED" || text != "got 4" {
		t.Fatalf("the next message: %s %q (want the grant to answer)", state, text)
	}
}
