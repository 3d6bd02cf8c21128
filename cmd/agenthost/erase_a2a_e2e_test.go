package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Deleting a session reaches what serve keeps of it in memory (issue 46): the A2A
// server's tasks hold the messages and answers of their context for as long as serve
// runs, and once DELETE /v1/sessions/a2a-CONTEXT answered, tasks/get no longer finds the
// context's task or its words.
func TestE2E_DeletingAnA2ASessionForgetsItsTasks(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "noted"}]}`})
	s := e.serve(t)
	code, body := call(t, s, "", "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user",
		"messageId":"m1","contextId":"ctx1","parts":[{"kind":"text","text":"the launch code is GECKO-7070"}]}}}`)
	var sent struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &sent); code != 200 || err != nil || sent.Result.ID == "" {
		t.Fatalf("message/send: %d %s", code, body)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + sent.Result.ID + `","historyLength":10}}`
	if code, body := call(t, s, "", "POST", "/a2a", get); code != 200 || !strings.Contains(body, "GECKO-7070") {
		t.Fatalf("tasks/get before the delete: %d %s", code, body)
	}
	if code, body := call(t, s, "", "DELETE", "/v1/sessions/a2a-ctx1", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	code, body = call(t, s, "", "POST", "/a2a", get)
	if strings.Contains(body, "GECKO-7070") || !strings.Contains(body, `"error"`) {
		t.Fatalf("tasks/get after the delete: %d %s", code, body)
	}
}
