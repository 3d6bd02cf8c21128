package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// forkEnv is a model that calls calc for 6*7 and then says what the result was
// ("scripted"), and one that only says what the result it is shown was ("resume"): the
// fork's run, in a process of its own, is the one call after the tool result.
func forkEnv(t *testing.T) *agentEnv {
	return newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "It is {{result c1}}."}]}`},
		[2]string{"resume", `{"turns": [
	  {"expect": {"last_role": "tool", "messages": 4}, "text": "It is {{result c1}}."}]}`})
}

var toolLine = regexp.MustCompile(`(?m)^#(\d+) tool calc \[c1\]: 42$`)

// forkAtAToolResult: a run calls calc (42); a fork at the tool result with the result
// replaced by 41, resumed with no new prompt, has the model see 41 (the scripted model
// says the result the request carries); the original is as it was; show names the
// lineage, diff shows both answers side by side; an edit that would leave a call's
// result missing is refused with the reason and stores nothing; the fork is audited.
func forkAtAToolResult(t *testing.T, e *agentEnv) {
	code, evs, stderr := e.runJSON(t, "what is 6*7?")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	sid := sessionOf(t, evs)
	before := e.agenthost(t, "sessions", "show", sid, "--seq")
	m := toolLine.FindStringSubmatch(before.stdout)
	if before.code != 0 || m == nil || !strings.Contains(before.stdout, "assistant: It is 42.") {
		t.Fatalf("sessions show --seq: %d\n%s%s", before.code, before.stdout, before.stderr)
	}
	at := m[1]

	bad := e.agenthost(t, "sessions", "fork", sid, "--at", at, "--replace-result", "c9=41")
	if bad.code != 2 || !strings.Contains(bad.stderr, `invalid fork: the fork has no tool result for call "c9"`) {
		t.Fatalf("fork with an edit of no result: %d %q %q", bad.code, bad.stdout, bad.stderr)
	}
	bad = e.agenthost(t, "sessions", "fork", sid, "--at", at, "--drop-last-user")
	if bad.code != 2 || !strings.Contains(bad.stderr, "the last user message is not the fork's last message") {
		t.Fatalf("fork dropping a user message answered: %d %q", bad.code, bad.stderr)
	}
	if r := e.agenthost(t, "sessions", "fork", "ses_none", "--at", "1"); r.code != 1 || !strings.Contains(r.stderr, `no session "ses_none"`) {
		t.Fatalf("fork of no session: %d %q", r.code, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "list", "--json"); strings.Count(r.stdout, `"id"`) != 1 {
		t.Fatalf("a refused fork stored a session:\n%s", r.stdout)
	}

	f := e.agenthost(t, "sessions", "fork", sid, "--at", at, "--replace-result", "c1=41")
	fid := strings.TrimSpace(f.stdout)
	if f.code != 0 || !strings.HasPrefix(fid, "ses_") || fid == sid || !strings.Contains(f.stderr, "forked "+sid+" at entry "+at) {
		t.Fatalf("fork: %d %q %q", f.code, f.stdout, f.stderr)
	}
	code, evs, stderr = e.runJSON(t, "--session", fid, "--provider", "resume")
	if code != 0 {
		t.Fatalf("resume the fork: exit %d: %s", code, stderr)
	}
	var status loop.Status
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.RunFinishedData); ok {
			status = d.Status
		}
	}
	if status != loop.StatusCompleted {
		t.Fatalf("the fork's run ended %q", status)
	}
	if after := e.agenthost(t, "sessions", "show", sid, "--seq"); after.stdout != before.stdout {
		t.Fatalf("the original changed:\nbefore\n%s\nafter\n%s", before.stdout, after.stdout)
	}
	show := e.agenthost(t, "sessions", "show", fid)
	if !strings.HasPrefix(show.stdout, "-- forked from "+sid+" at entry "+at+" (its first 4 entries), edited: replace_tool_result c1\n") ||
		!strings.Contains(show.stdout, "tool calc [c1]: 41\n") || !strings.Contains(show.stdout, "assistant: It is 41.") || strings.Contains(show.stdout, "[c1]: 42") || strings.Contains(show.stdout, "It is 42") {
		t.Fatalf("sessions show of the fork:\n%s%s", show.stdout, show.stderr)
	}

	diff := e.agenthost(t, "sessions", "diff", sid, fid, "--json")
	var c loop.Comparison
	if err := json.Unmarshal([]byte(diff.stdout), &c); err != nil {
		t.Fatalf("diff --json: %v %s %s", err, diff.stdout, diff.stderr)
	}
	if c.A.Session != sid || c.B.Session != fid || c.B.From != 4 || c.A.Runs != 1 || c.B.Runs != 1 ||
		c.A.Messages[len(c.A.Messages)-1].Text() != "It is 42." || len(c.B.Messages) != 1 || c.B.Messages[0].Text() != "It is 41." {
		t.Fatalf("diff: %+v", c)
	}
	text := e.agenthost(t, "sessions", "diff", sid, fid)
	if !regexp.MustCompile(`(?m)^\d+ +assistant: It is 42\. +assistant: It is 41\.$`).MatchString(text.stdout) ||
		!regexp.MustCompile(`(?m)^runs +1 +1$`).MatchString(text.stdout) || !strings.Contains(text.stdout, "cost") {
		t.Fatalf("diff side by side:\n%s%s", text.stdout, text.stderr)
	}
	if r := e.agenthost(t, "sessions", "diff", sid, sid); r.code != 2 || !strings.Contains(r.stderr, "neither session is a fork of the other") {
		t.Fatalf("diff of unrelated sessions: %d %q", r.code, r.stderr)
	}

	var forks []audit.Record
	for _, r := range auditRecords(t, e) {
		if r.Action == audit.ActionSessionFork {
			forks = append(forks, r)
		}
	}
	if len(forks) != 1 || forks[0].Target != fid || forks[0].Detail["parent"] != sid || forks[0].Detail["at"] != at ||
		forks[0].Detail["edits"] != "replace_tool_result c1" {
		t.Fatalf("audit of the fork: %+v", forks)
	}
}

func TestE2E_ForkAtAToolResultReplaceItAndResume_SQLite(t *testing.T) {
	forkAtAToolResult(t, forkEnv(t))
}

func TestE2E_ForkAtAToolResultReplaceItAndResume_PostgreSQL(t *testing.T) {
	e := forkEnv(t)
	usePostgres(t, e)
	forkAtAToolResult(t, e)
}

// Over HTTP, through the door: a user forks her own session (the fork is hers: another
// user gets 404 for it), and another user, or a viewer, asking to fork it gets what a
// session that does not exist gets (404, the same words); an invalid edit is 400 with
// the reason; GET shows the lineage; the fork (its last turn dropped) goes on with a new message; diff needs
// both sessions readable.
func TestE2E_ForkOverHTTPIsTheCallersAndAForeignSessionIsNotFound(t *testing.T) {
	s, tok := usersEnv(t)
	ana, bo, vi := tok["ana"], tok["bo"], tok["vi"]
	if code, body := call(t, s, ana, "POST", "/v1/runs", runBody("f1", "r1", "hi")); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("ana's run: %d %s", code, body)
	}
	code, body := call(t, s, ana, "GET", "/v1/sessions/f1", "")
	var detail struct {
		Entries []loop.Entry  `json:"entries"`
		Lineage *loop.Lineage `json:"lineage"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &detail) != nil || detail.Lineage != nil {
		t.Fatalf("GET f1: %d %s", code, body)
	}
	var at int64
	for _, e := range detail.Entries {
		if e.Kind == loop.EntryMessage && e.Message.Role == loop.RoleUser {
			at = e.Seq
		}
	}
	forkBody := `{"at": ` + strconv.FormatInt(at, 10) + `, "edits": [{"op": "drop_last_turn"}]}`

	for _, who := range []struct{ name, token, session string }{{"bo", bo, "f1"}, {"vi", vi, "f1"}, {"bo", bo, "nope"}} {
		code, body := call(t, s, who.token, "POST", "/v1/sessions/"+who.session+"/fork", forkBody)
		if code != 404 || strings.TrimSpace(body) != `{"error":"no session \"`+who.session+`\""}` {
			t.Fatalf("%s forks %s: %d %s", who.name, who.session, code, body)
		}
	}
	if code, body := call(t, s, ana, "POST", "/v1/sessions/f1/fork", `{"at": 1, "edits": [{"op": "rewrite"}]}`); code != 400 || !strings.Contains(body, `unknown edit \"rewrite\"`) {
		t.Fatalf("an invalid edit: %d %s", code, body)
	}

	code, body = call(t, s, ana, "POST", "/v1/sessions/f1/fork", forkBody)
	var made struct {
		Session string       `json:"session"`
		Lineage loop.Lineage `json:"lineage"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &made) != nil || made.Lineage.Parent != "f1" || made.Lineage.At != at || made.Lineage.By != whoami(t, s, ana).ID {
		t.Fatalf("ana forks f1: %d %s", code, body)
	}
	fork := made.Session
	if code, body := call(t, s, bo, "GET", "/v1/sessions/"+fork, ""); code != 404 {
		t.Fatalf("bo reads ana's fork: %d %s", code, body)
	}
	code, body = call(t, s, ana, "GET", "/v1/sessions/"+fork, "")
	detail.Lineage = nil
	if code != 200 || json.Unmarshal([]byte(body), &detail) != nil || detail.Lineage == nil || detail.Lineage.Parent != "f1" ||
		len(detail.Entries) != 1 || detail.Entries[0].Message.Role != loop.RoleSystem {
		t.Fatalf("GET the fork: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/runs", runBody(fork, "r2", "hi there")); code != 200 || !strings.Contains(body, "RUN_FINISHED") || !strings.Contains(body, "hello") {
		t.Fatalf("resume the fork: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "GET", "/v1/sessions/f1/diff/"+fork, ""); code != 404 {
		t.Fatalf("bo's diff: %d %s", code, body)
	}
	code, body = call(t, s, ana, "GET", "/v1/sessions/f1/diff/"+fork, "")
	var c loop.Comparison
	if code != 200 || json.Unmarshal([]byte(body), &c) != nil || c.A.From != at || c.B.Runs != 1 || len(c.B.Messages) != 2 || c.B.Messages[1].Text() != "hello" {
		t.Fatalf("ana's diff: %d %s", code, body)
	}
}

// A fork is sealed as any session: on a keyed store the text an edit put into it is not
// in the file in clear (nor its lineage's edits), yet sessions show reads it.
func TestE2E_ForkOnAKeyedStoreIsSealed(t *testing.T) {
	e := forkEnv(t)
	key := e.agenthost(t, "store", "keygen")
	if key.code != 0 {
		t.Fatalf("keygen: %d %s", key.code, key.stderr)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "store.key"), []byte(key.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(e.manifest)
	keyed := strings.Replace(string(b), `path = "sessions.db"`, `path = "sessions.db"`+"\nkey_file = \"store.key\"", 1)
	if err := os.WriteFile(e.manifest, []byte(keyed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, evs, stderr := e.runJSON(t, "what is 6*7?")
	if code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	sid := sessionOf(t, evs)
	m := toolLine.FindStringSubmatch(e.agenthost(t, "sessions", "show", sid, "--seq").stdout)
	if m == nil {
		t.Fatal("no tool result in sessions show --seq")
	}
	f := e.agenthost(t, "sessions", "fork", sid, "--at", m[1], "--replace-result", "c1=quetzalcoatl")
	if f.code != 0 {
		t.Fatalf("fork: %d %s", f.code, f.stderr)
	}
	if show := e.agenthost(t, "sessions", "show", strings.TrimSpace(f.stdout)); !strings.Contains(show.stdout, "tool calc [c1]: quetzalcoatl") {
		t.Fatalf("show the fork: %s %s", show.stdout, show.stderr)
	}
	if dbHolds(t, e.dir, "quetzalcoatl") {
		t.Fatal("the fork's edited result is in the store file in clear")
	}
}
