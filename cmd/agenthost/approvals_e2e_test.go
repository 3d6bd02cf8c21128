package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
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
