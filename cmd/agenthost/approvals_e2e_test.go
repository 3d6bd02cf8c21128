package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/pgtest"
)

// Through the binary: an [[approvals]] rule asks only for the calls its condition
// names (a product, not a sum), --approve none answers the one it asks about, and the
// audit log holds the decision with its rule and argument hash; a rule that does not
// compile stops the load at its file, line and key.
func TestE2E_AnApprovalRuleAsksOnlyWhatItsConditionNames(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\": \"1+1\"}"}, {"id": "c2", "name": "calc", "arguments": "{\"expression\": \"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}} and {{result c2}}"}]}`})
	appendManifest(t, e.manifest, "\n[[approvals]]\nname = \"products\"\nwhen = 'tool == \"calc\" && args.expression.contains(\"*\")'\ndecision = \"ask\"\n")
	r := e.agenthost(t, "run", "--json", "--user", "ana", "--approve", "none", "--session", "s1", "--new", "sums and products")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	s := strings.Join(shape(events(t, r.stdout)), "\n")
	if !strings.Contains(s, "final:2 and Error: tool call rejected: rejected by --approve none") {
		t.Fatalf("events:\n%s", s)
	}
	var recs []audit.Record
	r = e.agenthost(t, "audit", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s", err, r.stderr)
	}
	var got []string
	for _, rec := range recs {
		if rec.Action == audit.ActionApproval {
			got = append(got, rec.Actor+" "+rec.Detail["call"]+" "+rec.Detail["decision"]+" "+rec.Detail["by"]+" "+rec.Detail["rule"]+" "+rec.Detail["args_hash"][:7])
		}
	}
	if want := "policy c2 ask approver products sha256:\nana c2 deny approver products sha256:"; strings.Join(got, "\n") != want {
		t.Fatalf("approval records:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	if r := e.agenthost(t, "approvals", "grants", "list", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("grants list: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "approvals", "grants", "revoke", "grant_00"); r.code == 0 || !strings.Contains(r.stderr, "no such grant") {
		t.Fatalf("revoke of nothing: exit %d %s", r.code, r.stderr)
	}

	appendManifest(t, e.manifest, "\n[[approvals]]\nwhen = 'args.amount >'\ndecision = \"ask\"\n")
	r = e.agenthost(t, "run", "--approve", "none", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "agent.toml:") || !strings.Contains(r.stderr, "approvals[1].when") || !strings.Contains(r.stderr, "does not compile") {
		t.Fatalf("a bad rule: exit %d %s", r.code, r.stderr)
	}
}

// Through the binary: at the terminal, "s" allows calc for the rest of the session; the
// second calc call runs without a question; the grant is listed, revoked by the CLI,
// and both the grant's use and its revocation are in the audit log. On SQLite and on
// PostgreSQL (grants live in the store's key-value table).
func TestE2E_ATerminalSessionGrantIsUsedListedAndRevoked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { terminalGrant(t, false) })
	t.Run("postgres", func(t *testing.T) { terminalGrant(t, true) })
}

func terminalGrant(t *testing.T, pg bool) {
	if pg {
		t.Setenv("AGENTHOST_TEST_PG", pgtest.Start(t).NewDatabase(t))
	}
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\": \"1+1\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\": \"2+2\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}} {{result c2}}"}]}`})
	if pg {
		b, _ := os.ReadFile(e.manifest)
		m := strings.Replace(string(b), "kind = \"sqlite\"\npath = \"sessions.db\"", "kind = \"postgres\"\nurl = \"${AGENTHOST_TEST_PG}\"", 1)
		if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "--user", "ana", "--session", "s1", "--new", "go")
	cmd.Dir, cmd.Stdin = e.dir, strings.NewReader("s\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v %s", err, errb.String())
	}
	if n := strings.Count(errb.String(), "? allow calc"); n != 1 || !strings.Contains(out.String(), `"text":"2 4"`) {
		t.Fatalf("asked %d times, want once\nstderr: %s\nstdout: %s", n, errb.String(), out.String())
	}
	var grants []struct{ ID, Scope, Session, Tool, By string }
	r := e.agenthost(t, "approvals", "grants", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &grants); err != nil || len(grants) != 1 ||
		grants[0].Scope != "session" || grants[0].Session != "s1" || grants[0].Tool != "calc" || grants[0].By != "ana" {
		t.Fatalf("grants: %v %s %s", err, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "approvals", "grants", "revoke", grants[0].ID); r.code != 0 || r.stdout != "revoked "+grants[0].ID+"\n" {
		t.Fatalf("revoke: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "approvals", "grants", "list"); strings.Contains(r.stdout, grants[0].ID) {
		t.Fatalf("listed after the revoke: %s", r.stdout)
	}
	var recs []audit.Record
	r = e.agenthost(t, "audit", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs {
		switch rec.Action {
		case audit.ActionApproval:
			got = append(got, rec.Actor+" "+rec.Detail["call"]+" "+rec.Detail["decision"]+" "+rec.Detail["by"]+" "+rec.Detail["scope"]+" "+rec.Detail["grant"])
		case "approval.grant.revoke":
			got = append(got, rec.Actor+" revoked "+rec.Target)
		}
	}
	g := grants[0].ID
	want := []string{"policy c1 ask approver  ", "ana c1 allow approver session " + g, "policy c2 allow grant  " + g, "cli revoked " + g}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Through the binary: at the terminal, "h 2" allows calc for the run's user for 2
// hours: the run's second call runs without a question, and so do both calls of a
// later session of the same user run with --approve none (no one to ask: the grant
// answers); the grant is listed as ana's (her id, and her name beside it), expiring 2
// hours after it was given. An "h" with no valid number of hours is a no.
func TestE2E_ATerminalGrantForNHoursAnswersTheUsersOtherSessions(t *testing.T) {
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\": \"1+1\"}"}]},
	  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\": \"2+2\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}} {{result c2}}"}]}`})
	if r := e.agenthost(t, "users", "add", "ana"); r.code != 0 {
		t.Fatalf("users add: exit %d %s", r.code, r.stderr)
	}
	var users []struct{ ID, Name string }
	if r := e.agenthost(t, "users", "list", "--json"); json.Unmarshal([]byte(r.stdout), &users) != nil || len(users) != 1 || users[0].Name != "ana" {
		t.Fatalf("users list: %s %s", r.stdout, r.stderr)
	}
	ana := users[0].ID
	ask := func(session, answer string) (string, string) {
		cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "--user", "ana", "--session", session, "--new", "go")
		cmd.Dir, cmd.Stdin = e.dir, strings.NewReader(answer)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("run: %v %s", err, errb.String())
		}
		return out.String(), errb.String()
	}
	out, errs := ask("s0", "h\nn\n")
	if !strings.Contains(out, `rejected: the answer \"h\" names no hours (h8 is for 8 hours)`) {
		t.Fatalf("an h with no hours was not a no:\nstderr: %s\nstdout: %s", errs, out)
	}
	if r := e.agenthost(t, "approvals", "grants", "list", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("an h with no hours left a grant: %s", r.stdout)
	}
	out, errs = ask("s1", "h 2\n")
	if n := strings.Count(errs, "? allow calc"); n != 1 || !strings.Contains(errs, "h8: for you for 8 hours") || !strings.Contains(out, `"text":"2 4"`) {
		t.Fatalf("asked %d times, want once\nstderr: %s\nstdout: %s", n, errs, out)
	}
	r := e.agenthost(t, "run", "--json", "--user", "ana", "--approve", "none", "--session", "s2", "--new", "go")
	if r.code != 0 || !strings.Contains(r.stdout, `"text":"2 4"`) {
		t.Fatalf("ana's other session: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var grants []struct {
		loop.Grant
		UserName string `json:"user_name"`
		ByName   string `json:"by_name"`
	}
	r = e.agenthost(t, "approvals", "grants", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &grants); err != nil || len(grants) != 1 {
		t.Fatalf("grants: %v %s %s", err, r.stdout, r.stderr)
	}
	if g := grants[0]; g.Scope != "user" || g.User != ana || g.By != ana || g.UserName != "ana" || g.ByName != "ana" ||
		g.Tool != "calc" || g.Expires.Sub(g.Created) != 2*time.Hour {
		t.Fatalf("grant %+v: want calc for ana (%s) for 2 hours", g, ana)
	}
	// The table names the user beside the id, in the FOR and BY columns.
	r = e.agenthost(t, "approvals", "grants", "list")
	if row := strings.Fields(strings.Split(r.stdout, "\n")[1]); len(row) < 8 || row[0] != grants[0].ID || row[1] != "user" ||
		row[2] != "ana" || row[3] != "("+ana+")" || row[4] != "tool" || row[5] != "calc" || row[6] != "ana" || row[7] != "("+ana+")" {
		t.Fatalf("grants table:\n%s", r.stdout)
	}
}
