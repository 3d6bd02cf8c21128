package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	_ "modernc.org/sqlite"
)

// Runs, approvals and deletions land in the audit log, in order, for whom they were
// done; `audit verify` holds until a record is changed in the file, and then names it.
func TestE2E_TheAuditLogRecordsRunsApprovalsAndDeletionsAndCatchesTampering(t *testing.T) {
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\": \"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "42"}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	r := e.agenthost(t, "run", "--json", "--user", "ana", "--approve", "all", "--session", "s1", "--new", "what is 6*7?")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(e.agenthost(t, "memory", "add", "--user", "ana", "likes tea").stdout)
	for _, args := range [][]string{{"memory", "rm", id}, {"sessions", "rm", "s1"}} {
		if r := e.agenthost(t, args...); r.code != 0 {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
		}
	}
	var recs []audit.Record
	r = e.agenthost(t, "audit", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	var got []string
	for _, rec := range recs {
		got = append(got, rec.Action+" "+rec.Actor+" "+strings.SplitN(rec.Target, "/", 2)[0]+" "+details(rec.Detail))
	}
	// The configuration is recorded once, though five commands loaded it: it did not change.
	// The approval is two decisions: the request (with its expiry) and the answer, each
	// naming the hash of the arguments it is bound to.
	hash := loop.ArgsHash(`{"expression": "6*7"}`)
	want := []string{
		"audit.genesis agenthost  log=" + recs[0].Detail["log"],
		"config.load host  manifest_sha256=" + fileSHA(t, e.manifest) + " plugin:calc=" + fileSHA(t, calcWasm),
		"run.start ana s1 actor_role=operator agent=e2e",
		"approval policy s1 approved=false args_hash=" + hash + " by=approver call=c1 decision=ask expires_at=" + recs[3].Detail["expires_at"] + " tool=calc",
		"approval ana s1 approved=true args_hash=" + hash + " by=approver call=c1 decision=allow scope=once tool=calc",
		"run.end ana s1 actor_role=operator cost_usd=0 reason=end_turn status=completed tokens=0",
		"memory.delete cli " + id + " deleted=1",
		"session.delete cli s1 ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := e.agenthost(t, "audit", "verify"); r.code != 0 || r.stdout != "8 records, chain intact from its genesis record; last hash "+recs[7].Hash+"\n" {
		t.Fatalf("verify: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit SET actor = 'mallory' WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if r := e.agenthost(t, "audit", "verify"); r.code != 1 || !strings.Contains(r.stderr, "audit record 4 was changed after it was written") {
		t.Fatalf("verify after tampering: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// A changed manifest is recorded at the next command that loads it, with its new digest.
func TestE2E_AConfigurationChangeIsAudited(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	for range 2 {
		if r := e.agenthost(t, "plugins", "list"); r.code != 0 {
			t.Fatalf("plugins list: %d %s", r.code, r.stderr)
		}
	}
	appendManifest(t, e.manifest, "\n# tuned\n")
	if r := e.agenthost(t, "plugins", "list"); r.code != 0 {
		t.Fatalf("plugins list: %d %s", r.code, r.stderr)
	}
	var recs []audit.Record
	r := e.agenthost(t, "audit", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 3 || recs[0].Action != audit.ActionGenesis {
		t.Fatalf("audit list: %v %s", err, r.stdout)
	}
	if recs[1].Detail["manifest_sha256"] == recs[2].Detail["manifest_sha256"] || recs[2].Detail["manifest_sha256"] != fileSHA(t, e.manifest) ||
		recs[2].Detail["plugin:calc"] != fileSHA(t, calcWasm) {
		t.Fatalf("records %+v", recs)
	}
}
