package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// a2a10 sends one A2A 1.0 request (the A2A-Version header set) and returns its status
// and body.
func a2a10(t *testing.T, s *served, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A2A 1.0 reaches tasks through the same owner check as 0.3, in both bindings: bo's
// GetTask of ana's task (JSON-RPC, and GET /a2a/rest/tasks/ID) answers as for a task that
// does not exist, and ListTasks (new in 1.0) lists only the caller's tasks.
func TestE2E_A2A10TasksAreTheOwnersOnly(t *testing.T) {
	_, s, tok := idsEnv(t, `require_approval = ["calc"]`)
	ana, bo := tok["ana"], tok["bo"]
	rpc := func(token, method, params string) string {
		code, body := a2a10(t, s, token, "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", method, code, body)
		}
		return body
	}
	var sent struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		} `json:"result"`
	}
	body := rpc(ana, "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"approve this"}]}}`)
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent.Result.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("ana's SendMessage: %v %s", err, body)
	}
	id := sent.Result.Task.ID
	unknown := rpc(bo, "GetTask", `{"id":"no-such-task"}`)
	if got := rpc(bo, "GetTask", `{"id":"`+id+`"}`); strings.ReplaceAll(got, id, "no-such-task") != unknown || !strings.Contains(got, `"error"`) {
		t.Errorf("bo's GetTask of ana's task: %s (unknown task: %s)", got, unknown)
	}
	codeUnknown, restUnknown := a2a10(t, s, bo, "GET", "/a2a/rest/tasks/no-such-task", "")
	if code, got := a2a10(t, s, bo, "GET", "/a2a/rest/tasks/"+id, ""); code != codeUnknown || code == 200 || strings.ReplaceAll(got, id, "no-such-task") != restUnknown {
		t.Errorf("bo's REST GET of ana's task: %d %s (unknown task: %d %s)", code, got, codeUnknown, restUnknown)
	}
	for _, c := range []struct{ who, token, want string }{{"bo", bo, ""}, {"ana", ana, id}} {
		var list struct {
			Result struct {
				Tasks []struct {
					ID string `json:"id"`
				} `json:"tasks"`
			} `json:"result"`
		}
		body := rpc(c.token, "ListTasks", `{}`)
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s's ListTasks: %v %s", c.who, err, body)
		}
		var ids []string
		for _, task := range list.Result.Tasks {
			ids = append(ids, task.ID)
		}
		if strings.Join(ids, ",") != c.want {
			t.Errorf("%s's ListTasks: %q, want %q (%s)", c.who, ids, c.want, body)
		}
		code, rest := a2a10(t, s, c.token, "GET", "/a2a/rest/tasks", "")
		if code != 200 || strings.Contains(rest, id) != (c.want != "") {
			t.Errorf("%s's REST ListTasks: %d %s", c.who, code, rest)
		}
	}
}
