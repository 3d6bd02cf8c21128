package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
)

// surfaces are the matrix's rows, in the order they run (a later row may use what an
// earlier one made).
func (m *matrixEnv) surfaces() []matrixSurface {
	ana, bo, root := m.tok["ana"], m.tok["bo"], m.tok["root"]
	anaID, rootID := m.id["ana"], m.id["root"]
	local := "a local user administers the store's file: the CLI's principal is an operator"
	var task string // ana's A2A task
	return append(m.cliSurfaces(local), []matrixSurface{
		{name: "serve HTTP POST /v1/runs", user: anaID, by: anaID, tokens: "7", secret: true, enter: func(t *testing.T) string {
			return mustRun(t, m.srv, ana, runBody("m-http", "r1", "hi"))
		}, foreign: func(t *testing.T) {
			for _, req := range [][3]string{{"POST", "/v1/runs", runBody("m-http", "r2", "hi")}, {"GET", "/v1/sessions/m-http", ""},
				{"GET", "/v1/sessions/m-http/runs/r1/events", ""}, {"POST", "/v1/sessions/m-http/runs/r1/feedback", `{"score":1}`}} {
				code, body := call(t, m.srv, bo, req[0], req[1], req[2])
				unknown := `{"error":"no session \"m-none\""}` + "\n" // a new session would be bo's own
				if req[1] != "/v1/runs" {
					_, unknown = call(t, m.srv, bo, req[0], strings.ReplaceAll(req[1], "m-http", "m-none"), req[2])
				}
				refusedLikeUnknown(t, req[0]+" "+req[1], code, body, unknown, "m-http", "m-none")
			}
		}},
		{name: "AG-UI resume of an interrupted run", user: anaID, by: anaID, tokens: "7", secret: true, before: func(t *testing.T) {
			if body := mustRun(t, m.srv, ana, runBody("m-agui", "r1", "approve")); !strings.Contains(body, `"interrupt"`) {
				t.Fatalf("ana's run did not wait for approval: %s", body)
			}
		}, enter: func(t *testing.T) string {
			return mustRun(t, m.srv, ana, approveBody("m-agui", "r2"))
		}, foreign: func(t *testing.T) {
			code, body := call(t, m.srv, bo, "POST", "/v1/runs", approveBody("m-agui", "r3"))
			refusedLikeUnknown(t, "resumes ana's run", code, body, `{"error":"no session \"m-none\""}`+"\n", "m-agui", "m-none")
		}},
		{name: "A2A message/send", user: anaID, by: anaID, tokens: "7", secret: true, enter: func(t *testing.T) string {
			res, body := a2aCall(t, m.srv, ana, "message/send", a2aMessage("m1", "", "hi"))
			task, _ = res["result"].(map[string]any)["id"].(string)
			return body
		}, foreign: func(t *testing.T) {
			_, unknown := a2aCall(t, m.srv, bo, "message/send", a2aMessage("m2", "no-such-task", "hi"))
			_, got := a2aCall(t, m.srv, bo, "message/send", a2aMessage("m2", task, "hi"))
			if strings.ReplaceAll(got, task, "no-such-task") != unknown || strings.Contains(got, "[phone]") {
				t.Fatalf("bo writes to ana's task: %s (unknown: %s)", got, unknown)
			}
		}},
		{name: "A2A tasks/get", noRun: "a read starts no run", secret: true, enter: func(t *testing.T) string {
			_, body := a2aCall(t, m.srv, ana, "tasks/get", `{"id":"`+task+`"}`)
			return body
		}, foreign: func(t *testing.T) {
			_, unknown := a2aCall(t, m.srv, bo, "tasks/get", `{"id":"no-such-task"}`)
			_, got := a2aCall(t, m.srv, bo, "tasks/get", `{"id":"`+task+`"}`)
			if strings.ReplaceAll(got, task, "no-such-task") != unknown {
				t.Fatalf("bo reads ana's task: %s (unknown: %s)", got, unknown)
			}
		}},
		{name: "A2A tasks/cancel (of a task waiting for approval)", user: anaID, by: anaID, tokens: "7", enter: func(t *testing.T) string {
			res, body := a2aCall(t, m.srv, ana, "message/send", a2aMessage("m3", "", "approve this"))
			task, _ = res["result"].(map[string]any)["id"].(string)
			return body
		}, foreign: func(t *testing.T) {
			had := len(auditRecords(t, m.e))
			_, unknown := a2aCall(t, m.srv, bo, "tasks/cancel", `{"id":"no-such-task"}`)
			_, got := a2aCall(t, m.srv, bo, "tasks/cancel", `{"id":"`+task+`"}`)
			if strings.ReplaceAll(got, task, "no-such-task") != unknown {
				t.Fatalf("bo cancels ana's task: %s (unknown: %s)", got, unknown)
			}
			if _, body := a2aCall(t, m.srv, ana, "tasks/get", `{"id":"`+task+`"}`); !strings.Contains(body, "input-required") {
				t.Fatalf("ana's task after bo's cancel: %s", body)
			}
			if _, body := a2aCall(t, m.srv, ana, "tasks/cancel", `{"id":"`+task+`"}`); !strings.Contains(body, "canceled") {
				t.Fatalf("ana cancels her own task: %s", body)
			}
			var aborts []audit.Record // the door's record of the cancel: ana's, none of bo's
			for _, r := range auditRecords(t, m.e)[had:] {
				if r.Action == audit.ActionRunAbort {
					aborts = append(aborts, r)
				}
			}
			if len(aborts) != 1 || aborts[0].Actor != anaID || aborts[0].Detail["stopped"] != "false" {
				t.Fatalf("the cancels' abort records: %+v, want one by %s (no run in progress)", aborts, anaID)
			}
		}},
		{name: "mcp serve --http tool call", user: anaID, by: anaID, secret: true, enter: func(t *testing.T) string {
			return mcpCall(t, m.httpMCP(ana), "http_get", map[string]any{"url": m.secret}, "reach ana")
		}, foreign: m.foreignMCPSession},
		{name: "workflow over HTTP: run, then approve", user: anaID, by: anaID, tokens: "7", secret: true, before: func(t *testing.T) {
			if code, body := call(t, m.srv, ana, "POST", "/v1/workflows/gate/runs", wfBody("wf-1", "")); code != 200 || !strings.Contains(body, `"interrupt"`) {
				t.Fatalf("ana's workflow run: %d %s", code, body)
			}
		}, enter: func(t *testing.T) string {
			code, body := call(t, m.srv, ana, "POST", "/v1/workflows/gate/runs", wfBody("wf-1", "true"))
			if code != 200 || !strings.Contains(body, `"status":"completed"`) {
				t.Fatalf("ana approves: %d %s", code, body)
			}
			return body
		}, foreign: func(t *testing.T) { m.foreignWorkflowRun(t, "wf-1") }},
		{name: "workflow over HTTP: an admin approves a user's run", user: anaID, by: rootID, tokens: "7", secret: true, before: func(t *testing.T) {
			if code, body := call(t, m.srv, ana, "POST", "/v1/workflows/gate/runs", wfBody("wf-2", "")); code != 200 || !strings.Contains(body, `"interrupt"`) {
				t.Fatalf("ana's workflow run: %d %s", code, body)
			}
		}, enter: func(t *testing.T) string {
			return m.adminApproves(t, root, "wf-2")
		}, foreign: func(t *testing.T) { m.foreignWorkflowRun(t, "wf-2") }},
		{name: "cluster worker (serve --workers)", user: anaID, by: anaID, tokens: "7", secret: true, enter: func(t *testing.T) string {
			return mustRun(t, m.cluster, ana, runBody("m-cluster", "r1", "hi"))
		}, foreign: func(t *testing.T) {
			for _, req := range [][3]string{{"POST", "/v1/runs", runBody("m-cluster", "r2", "hi")}, {"GET", "/v1/sessions/m-cluster", ""}} {
				code, body := call(t, m.cluster, bo, req[0], req[1], req[2])
				if code != 404 || strings.Contains(body, "[phone]") {
					t.Fatalf("bo %s %s on the cluster: %d %s", req[0], req[1], code, body)
				}
			}
		}},
		{name: "sampling (an MCP server's sampling/createMessage)", user: anaID, by: anaID, tokens: "21", secret: true, enter: func(t *testing.T) string {
			return mustRun(t, m.srv, ana, runBody("m-sample", "r1", "sample"))
		}, foreign: func(t *testing.T) { m.foreignSampling(t) }},
	}...)
}

// cliSurfaces are the rows of the local user's entrances.
func (m *matrixEnv) cliSurfaces(local string) []matrixSurface {
	anaID := m.id["ana"]
	return []matrixSurface{
		{name: "cli run", user: anaID, by: anaID, tokens: "7", secret: true, why: local, enter: func(t *testing.T) string {
			r := m.e.agenthost(t, "run", "--user", "ana", "--session", "m-run", "--new", "hi")
			if r.code != 0 {
				t.Fatalf("run: exit %d %s", r.code, r.stderr)
			}
			return r.stdout
		}},
		{name: "plugins call", user: anaID, by: anaID, secret: true, why: local, enter: func(t *testing.T) string {
			r := m.e.agenthost(t, "plugins", "call", "--user", "ana", "http_get", "http_get", `{"url":"`+m.secret+`"}`)
			if r.code != 0 || !strings.Contains(r.stdout, "reach ana") {
				t.Fatalf("plugins call: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
			return r.stdout
		}},
		{name: "mcp serve (stdio) tool call", user: anaID, by: anaID, secret: true, why: local + " (mcp serve --user)", enter: func(t *testing.T) string {
			return mcpCall(t, stdioMCP(m.e), "http_get", map[string]any{"url": m.secret}, "reach ana")
		}},
		{name: "workflow run (tool and prompt steps)", user: "anonymous", by: "", tokens: "7", secret: true, why: local, enter: func(t *testing.T) string {
			r := m.e.agenthost(t, "workflow", "run", "door")
			if r.code != 0 {
				t.Fatalf("workflow run: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
			return r.stdout
		}},
	}
}

// mustRun posts a run (or a resume) as the token's user and reads its whole stream.
func mustRun(t *testing.T, s *served, token, body string) string {
	t.Helper()
	code, got := call(t, s, token, "POST", "/v1/runs", body)
	if code != 200 || !strings.Contains(got, "RUN_FINISHED") {
		t.Fatalf("run: %d %s", code, got)
	}
	return got
}

func a2aMessage(id, task, text string) string {
	ref := ""
	if task != "" {
		ref = `,"taskId":"` + task + `"`
	}
	return `{"message":{"kind":"message","role":"user","messageId":"` + id + `"` + ref + `,"parts":[{"kind":"text","text":"` + text + `"}]}}`
}

// adminApproves is root deciding ana's waiting workflow run: it completes, and the
// decision is audited with root as the actor, naming ana's run.
func (m *matrixEnv) adminApproves(t *testing.T, root, run string) string {
	t.Helper()
	body := strings.Replace(wfBody(run, "true"), `{"runId"`, `{"owner":"`+m.id["ana"]+`","runId"`, 1)
	code, got := call(t, m.srv, root, "POST", "/v1/workflows/gate/runs", body)
	if code != 200 || !strings.Contains(got, `"status":"completed"`) {
		t.Fatalf("root approves ana's run: %d %s", code, got)
	}
	for _, r := range auditRecords(t, m.e) {
		if r.Action == audit.ActionWorkflowRun && r.Actor == m.id["root"] && r.Detail["owner"] == m.id["ana"] && r.Detail["step:ok"] == "approved" {
			return got
		}
	}
	t.Fatalf("root's approval of ana's run is not audited with root as the actor")
	return ""
}

// foreignWorkflowRun: bo's approval, resume and read of ana's run answer what an unknown
// run does; his listing holds none of her runs, hers all of them and no one else's.
func (m *matrixEnv) foreignWorkflowRun(t *testing.T, run string) {
	bo, anaID := m.tok["bo"], m.id["ana"]
	url := "/v1/workflows/gate/runs"
	owned := func(b string) string { return strings.Replace(b, `{"runId"`, `{"owner":"`+anaID+`","runId"`, 1) }
	for _, b := range []string{wfBody(run, "true"), owned(wfBody(run, "true")), owned(wfBody(run, ""))} {
		code, body := call(t, m.srv, bo, "POST", url, b)
		_, unknown := call(t, m.srv, bo, "POST", url, strings.ReplaceAll(b, run, "wf-none"))
		refusedLikeUnknown(t, "decides ana's workflow run", code, body, unknown, run, "wf-none")
	}
	code, body := call(t, m.srv, bo, "GET", url+"/"+run+"?owner="+anaID, "")
	_, unknown := call(t, m.srv, bo, "GET", url+"/wf-none?owner="+anaID, "")
	refusedLikeUnknown(t, "reads ana's workflow run", code, body, unknown, run, "wf-none")
	var runs []struct{ RunID, Owner string }
	_, list := call(t, m.srv, bo, "GET", url, "")
	if json.Unmarshal([]byte(list), &runs) != nil || strings.Contains(list, anaID) {
		t.Fatalf("bo's listing: %s", list)
	}
	code, list = call(t, m.srv, m.tok["ana"], "GET", url, "")
	if json.Unmarshal([]byte(list), &runs) != nil || code != 200 || len(runs) == 0 {
		t.Fatalf("ana's listing: %d %s", code, list)
	}
	for _, r := range runs {
		if r.Owner != anaID {
			t.Fatalf("ana's listing holds another's run: %s", list)
		}
	}
	if !strings.Contains(list, `"`+run+`"`) {
		t.Fatalf("ana's listing lacks her run %s: %s", run, list)
	}
}

// foreignSampling: the sampling's own session (a nested run's) is ana's: bo cannot read
// it, she can.
func (m *matrixEnv) foreignSampling(t *testing.T) {
	var session string
	for _, r := range auditRecords(t, m.e) {
		if r.Action == audit.ActionRunStart && r.Detail["sampling"] == "mcp:everything" {
			session, _, _ = strings.Cut(r.Target, "/")
		}
	}
	if session == "" {
		t.Fatal("no sampling run in the audit log")
	}
	code, body := call(t, m.srv, m.tok["bo"], "GET", "/v1/sessions/"+session, "")
	_, unknown := call(t, m.srv, m.tok["bo"], "GET", "/v1/sessions/ses_none", "")
	refusedLikeUnknown(t, "reads ana's sampling", code, body, unknown, session, "ses_none")
	if code, body := call(t, m.srv, m.tok["ana"], "GET", "/v1/sessions/"+session, ""); code != 200 || !strings.Contains(body, "say hi") {
		t.Fatalf("ana reads her sampling: %d %s", code, body)
	}
}
