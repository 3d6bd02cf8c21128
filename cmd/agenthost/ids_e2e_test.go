package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// idsEnv is a served agent with two users of the user role (ana, bo), an admin (root),
// an operator (op), the workflow "gated" (a calc step, a prompt step, an approval, a
// calc step after it), the tool policy given, and a model that answers a
// prompt step, asks for calc on "approve", and takes a minute on "slow".
func idsEnv(t *testing.T, policy string) (*agentEnv, *served, map[string]string) {
	t.Helper()
	workflows := `
[workflows.gated]
[[workflows.gated.steps]]
id = "total"
tool = "calc"
arguments = { expression = "2 * 21" }
[[workflows.gated.steps]]
id = "note"
prompt = "Write one line about ${steps.total.output}."
output = "note"
[[workflows.gated.steps]]
id = "ok"
approval = "Publish the total ${steps.total.output}?"
depends_on = ["note"]
[[workflows.gated.steps]]
id = "publish"
tool = "calc"
arguments = { expression = "${steps.total.output} + 1" }
depends_on = ["ok"]
output = "published"
`
	e := newEnv(t, workflows, policy, [2]string{"scripted", `{"stories": [
	  {"when": "one line", "turns": [{"text": "42 is the answer."}]},
	  {"when": "approve", "turns": [
	    {"tool_calls": [{"id": "a1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	    {"text": "it is {{result a1}}"}]},
	  {"when": "slow", "turns": [{"text": "too late", "delay_ms": 60000}]},
	  {"when": "hi", "turns": [{"text": "hello"}]}]}`})
	tokens := map[string]string{}
	for _, u := range [][2]string{{"ana", "user"}, {"bo", "user"}, {"op", "operator"}, {"root", "admin"}} {
		r := e.agenthost(t, "users", "add", u[0], "--role", u[1])
		if r.code != 0 {
			t.Fatalf("users add %s: %d %s", u[0], r.code, r.stderr)
		}
		tokens[u[0]] = strings.TrimSpace(r.stdout)
	}
	return e, e.serve(t), tokens
}

func wfBody(runID, resume string) string {
	if resume != "" {
		return `{"runId":"` + runID + `","resume":[{"interruptId":"ok","status":"resolved","payload":{"approved":` + resume + `}}]}`
	}
	return `{"runId":"` + runID + `","input":{}}`
}

// A workflow run is its owner's: bo's resume and approval of ana's run answer the same
// 404 as a run that does not exist (naming neither), and ana's run stays as it was; bo
// using her run id starts a run of his own, whose record, lease and step sessions (tool
// and prompt) are his; no one can start a run in a session id under "workflow:" (so bo
// can neither pre-create ana's step session nor hold her run's lease); ana's approval
// is audited with her id.
func TestE2E_WorkflowRunsAndTheirStepSessionsBelongToTheirOwner(t *testing.T) {
	e, s, tok := idsEnv(t, "")
	ana, bo, root, op := tok["ana"], tok["bo"], tok["root"], tok["op"]
	anaID, boID := whoami(t, s, ana).ID, whoami(t, s, bo).ID
	url := "/v1/workflows/gated/runs"

	// bo tries to pre-create the step sessions ana's run will use (the old name and the
	// new) and to hold her run's lease: refused before anything runs.
	for _, thread := range []string{"workflow:gated:" + anaID + ":ana-nightly-3~total", "workflow:gated:" + anaID + ":ana-nightly-3", "workflow:gated:ana-nightly-3"} {
		if code, body := call(t, s, bo, "POST", "/v1/runs", runBody(thread, "r1", "hi")); code != 403 || !strings.Contains(body, "workflows' own") {
			t.Fatalf("bo starts a run in %s: %d %s", thread, code, body)
		}
	}
	if code, body := call(t, s, bo, "POST", "/v1/runs", runBody("ana-nightly-3.total", "r1", "hi")); code != 200 {
		t.Fatalf("bo's own session under the old step name: %d %s", code, body)
	}

	code, body := call(t, s, ana, "POST", url, wfBody("ana-nightly-3", ""))
	if code != 200 || !strings.Contains(body, `"interrupt"`) || !strings.Contains(body, "42 is the answer.") {
		t.Fatalf("ana's run: %d %s", code, body)
	}
	// bo approves and rejects ana's run: the same 404 as a run that does not exist.
	_, unknown := call(t, s, bo, "POST", url, wfBody("no-such-run", "true"))
	for _, approved := range []string{"true", "false"} {
		code, body := call(t, s, bo, "POST", url, wfBody("ana-nightly-3", approved))
		if code != 404 || body != unknown || strings.Contains(body, "ana") {
			t.Fatalf("bo decides ana's run (%s): %d %s (unknown run: %s)", approved, code, body, unknown)
		}
	}
	// bo's run of the same id is his own: it runs every step again, in his sessions.
	code, body = call(t, s, bo, "POST", url, wfBody("ana-nightly-3", ""))
	if code != 200 || !strings.Contains(body, `"interrupt"`) || strings.Contains(body, `"resumed"`) {
		t.Fatalf("bo's run of the same id: %d %s", code, body)
	}
	anaTotal, boTotal := "workflow:gated:"+anaID+":ana-nightly-3~total", "workflow:gated:"+boID+":ana-nightly-3~total"
	calls := toolCallsIn(t, e, anaTotal, boTotal, "ana-nightly-3.total")
	if calls[anaTotal] != 1 || calls[boTotal] != 1 || calls["ana-nightly-3.total"] != 0 {
		t.Fatalf("step sessions' tool calls: %v", calls)
	}
	// The prompt steps ran in two conversations: one user message each.
	for _, who := range []string{anaID, boID} {
		st := s.sessionAs(t, root, "workflow:gated:"+who+":ana-nightly-3~note")
		if n := strings.Count(st, `"role":"user"`); n != 1 {
			t.Fatalf("%s's prompt step session holds %d user messages: %s", who, n, st)
		}
	}
	// bo reads none of ana's step sessions, and his own session under the old step name
	// holds no call of hers.
	for _, id := range []string{anaTotal, "workflow:gated:" + anaID + ":ana-nightly-3~note"} {
		if code, _ := call(t, s, bo, "GET", "/v1/sessions/"+id, ""); code != 404 {
			t.Fatalf("bo reads %s: %d", id, code)
		}
	}
	if _, body := call(t, s, bo, "GET", "/v1/sessions/ana-nightly-3.total", ""); strings.Contains(body, "2 * 21") {
		t.Fatalf("ana's call is in bo's session: %s", body)
	}
	// ana's run waited all along; her approval completes it.
	code, body = call(t, s, ana, "POST", url, wfBody("ana-nightly-3", "true"))
	if code != 200 || !strings.Contains(body, `"status":"completed"`) || !strings.Contains(body, `"published":43`) {
		t.Fatalf("ana approves: %d %s", code, body)
	}
	// The operator sees both runs, each with its owner.
	code, body = call(t, s, op, "GET", url, "")
	if code != 200 || !strings.Contains(body, `"owner":"`+anaID+`","status":"completed"`) || !strings.Contains(body, `"owner":"`+boID+`","status":"interrupted"`) {
		t.Fatalf("runs: %d %s", code, body)
	}
	// Audited: ana's start and approval, bo's start; none of bo's refused decisions.
	_, audit := call(t, s, root, "GET", "/v1/audit", "")
	if !strings.Contains(audit, `"action":"workflow.run","actor":"`+anaID+`","target":"workflow:gated:`+anaID+`:ana-nightly-3","detail":{"actor_name":"ana","resumed":"true","run":"ana-nightly-3","step:ok":"approved"`) {
		t.Fatalf("ana's approval is not audited:\n%s", audit)
	}
	if strings.Count(audit, `"action":"workflow.run","actor":"`+boID+`"`) != 1 || strings.Contains(audit, `"target":"workflow:gated:`+anaID+`:ana-nightly-3","detail":{"actor_name":"bo"`) {
		t.Fatalf("bo's refused decisions were audited:\n%s", audit)
	}
}

// sessionAs reads a stored session as the token's user.
func (s *served) sessionAs(t *testing.T, token, id string) string {
	t.Helper()
	code, body := call(t, s, token, "GET", "/v1/sessions/"+id, "")
	if code != 200 {
		t.Fatalf("session %s: %d %s", id, code, body)
	}
	return body
}

func a2aCall(t *testing.T, s *served, token, method, params string) (map[string]any, string) {
	t.Helper()
	code, body := call(t, s, token, "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	var out map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("%s: %d %s", method, code, body)
	}
	return out, body
}

// Aborting by run id alone finds only the caller's runs: bo's abort of ana's live run
// answers what an unknown run id answers, without her session's name, and her run goes
// on until she aborts it.
func TestE2E_AbortByRunIDOfAForeignRunIsAnUnknownRun(t *testing.T) {
	_, s, tok := idsEnv(t, "")
	ana, bo := tok["ana"], tok["bo"]
	req, _ := http.NewRequest("POST", s.base+"/v1/runs", strings.NewReader(runBody("s-ana-secret-name", "r-live", "slow")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ana)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ana's slow run: %v %v", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	readUntil(t, sc, "RUN_STARTED")
	_, unknown := call(t, s, bo, "POST", "/v1/runs/r-unknown/abort", "{}")
	code, body := call(t, s, bo, "POST", "/v1/runs/r-live/abort", "{}")
	if code != 404 || strings.Contains(body, "s-ana-secret-name") || body != strings.ReplaceAll(unknown, "r-unknown", "r-live") {
		t.Fatalf("bo aborts ana's run: %d %s (unknown: %s)", code, body, unknown)
	}
	if code, body := call(t, s, bo, "POST", "/v1/sessions/s-ana-secret-name/runs/r-live/abort", "{}"); code != 404 {
		t.Fatalf("bo aborts by session: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/runs/r-live/abort", "{}"); code != 202 {
		t.Fatalf("ana aborts her own run: %d %s", code, body)
	}
}

// A name removed and added again is a new identity: the new ana reaches none of the old
// ana's sessions or memories; erasing "ana" now erases the new one's (nothing), and the
// old one's things are erased by her id.
func TestE2E_UsersRemovedAndAddedAgainStartWithNothing(t *testing.T) {
	e, s, tok := idsEnv(t, "")
	ana := tok["ana"]
	oldID := whoami(t, s, ana).ID
	if code, body := call(t, s, ana, "POST", "/v1/runs", runBody("s-old-ana", "r1", "hi")); code != 200 || !strings.Contains(body, "hello") {
		t.Fatalf("old ana's run: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/memory", `{"kind":"fact","text":"ana drinks green tea"}`); code != 201 {
		t.Fatalf("old ana's memory: %d %s", code, body)
	}
	if r := e.agenthost(t, "users", "rm", "ana"); r.code != 0 {
		t.Fatalf("users rm: %d %s", r.code, r.stderr)
	}
	r := e.agenthost(t, "users", "add", "ana", "--role", "user")
	if r.code != 0 {
		t.Fatalf("users add again: %d %s", r.code, r.stderr)
	}
	fresh := strings.TrimSpace(r.stdout)
	if code, _ := call(t, s, ana, "GET", "/v1/sessions", ""); code != 401 {
		t.Fatalf("the old token after rm: %d", code)
	}
	if id := whoami(t, s, fresh).ID; id == oldID {
		t.Fatalf("the new ana has the old id %s", id)
	}
	if _, body := call(t, s, fresh, "GET", "/v1/sessions", ""); strings.Contains(body, "s-old-ana") {
		t.Fatalf("the new ana lists the old one's session: %s", body)
	}
	for _, req := range [][3]string{
		{"GET", "/v1/sessions/s-old-ana", ""},
		{"POST", "/v1/runs", runBody("s-old-ana", "r2", "hi")},
	} {
		if code, body := call(t, s, fresh, req[0], req[1], req[2]); code != 404 {
			t.Fatalf("new ana %s %s: %d %s", req[0], req[1], code, body)
		}
	}
	if _, body := call(t, s, fresh, "GET", "/v1/memory", ""); strings.Contains(body, "green tea") {
		t.Fatalf("the new ana reads the old one's memory: %s", body)
	}
	// Erasure is by identity.
	var res struct {
		User     string
		Sessions []string
		Memories int
	}
	r = e.agenthost(t, "users", "erase", "ana", "--dry-run", "--json")
	if json.Unmarshal([]byte(r.stdout), &res) != nil || res.User == oldID || len(res.Sessions) != 0 || res.Memories != 0 {
		t.Fatalf("erase ana (the new one): %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "users", "erase", oldID, "--json")
	if json.Unmarshal([]byte(r.stdout), &res) != nil || res.User != oldID || strings.Join(res.Sessions, ",") != "s-old-ana" || res.Memories != 1 {
		t.Fatalf("erase the old ana by id: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if code, _ := call(t, s, tok["root"], "GET", "/v1/sessions/s-old-ana", ""); code != 404 {
		t.Fatalf("the erased session is still served: %d", code)
	}
}
