package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// queueApprover answers with its answers in turn, then says pending; it counts asks.
type queueApprover struct {
	mu      sync.Mutex
	answers []loop.Approval
	asked   []string
}

func (q *queueApprover) Approve(_ context.Context, c loop.ToolCall) (loop.Approval, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, c.ID)
	if len(q.answers) == 0 {
		return loop.Approval{}, loop.ErrApprovalPending
	}
	a := q.answers[0]
	q.answers = q.answers[1:]
	return a, nil
}

const approvalRules = `
[[approvals]]
name = "big-transfers"
when = 'tool == "transfer" && args.amount > 100'
decision = "ask"
[[approvals]]
name = "no-deletes"
when = 'tool == "delete" && role != "admin"'
decision = "deny"
reason = "deletes need an admin"
`

// openApprovalHost opens a host on the store storeConf names (audit log and grants) with the Go
// tools transfer and delete, the rules above, and the scripted model playing fixture.
func openApprovalHost(t *testing.T, storeConf, fixture string, ap loop.Approver, ran *[]string, more ...func(*Options)) *Host {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`[agent]
provider = "scripted"
model = "m1"
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
%s
%s`, scriptedBin, storeConf, approvalRules)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	tool := func(name string) loop.Tool {
		return loop.FuncTool{ToolSpec: loop.ToolSpec{Name: name}, Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			*ran = append(*ran, c.ID)
			return loop.TextResult("done " + c.ID), nil
		}}
	}
	opts := Options{Manifest: p, CacheDir: wasmCache, Approver: ap, Tools: []loop.Tool{tool("transfer"), tool("delete")}}
	for _, f := range more {
		f(&opts)
	}
	h, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func approvalRecords(t *testing.T, h *Host) []string {
	t.Helper()
	recs, err := h.Store.(audit.Store).Audit(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		switch r.Action {
		case audit.ActionApproval:
			d := r.Detail
			s := fmt.Sprintf("%s %s %s by=%s", r.Actor, d["call"], d["decision"], d["by"])
			for _, k := range []string{"rule", "scope", "reason"} {
				if d[k] != "" {
					s += " " + k + "=" + d[k]
				}
			}
			if d["grant"] != "" {
				s += " grant"
			}
			if d["args_hash"] != loop.ArgsHash(argsOf[d["call"]]) {
				t.Errorf("record %v: args_hash %s, want the call's", r.Detail, d["args_hash"])
			}
			if (d["decision"] == "ask" || d["scope"] == "session") && d["expires_at"] == "" {
				t.Errorf("record %v has no expiry", r.Detail)
			}
			out = append(out, s)
		case ActionGrantRevoke:
			out = append(out, r.Actor+" revoked")
		}
	}
	return out
}

var argsOf = map[string]string{"c1": `{"amount": 50}`, "c2": `{"amount": 500}`, "c3": `{"amount": 700}`, "c4": `{}`,
	"c5": `{"to": "bob"}`, "c6": `{"amount": 900}`}

// The tracker failures, through a real host (scripted model, SQLite): a conditional
// rule asks for a big transfer only; the approver's "allow transfer for this session"
// lets the next one through without asking; a deny rule and a rule that cannot decide
// (no amount) refuse; the grant is listed, revoked, and the next big transfer asks
// again; every decision is an audit record naming who, the rule or grant, the
// argument hash, the scope and the expiry.
func TestApprovalRulesAndASessionGrantUsedThenRevoked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { approvalRulesAndGrants(t, "kind = \"sqlite\"\npath = \"sessions.db\"") })
}

func approvalRulesAndGrants(t *testing.T, storeConf string) {
	ap := &queueApprover{answers: []loop.Approval{{Approved: true, Scope: loop.ScopeSession}}}
	var ran []string
	h := openApprovalHost(t, storeConf, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "transfer", "arguments": "{\"amount\": 50}"}, {"id": "c2", "name": "transfer", "arguments": "{\"amount\": 500}"}]},
	  {"tool_calls": [{"id": "c3", "name": "transfer", "arguments": "{\"amount\": 700}"}, {"id": "c4", "name": "delete", "arguments": "{}"},
	    {"id": "c5", "name": "transfer", "arguments": "{\"to\": \"bob\"}"}]},
	  {"text": "first"},
	  {"tool_calls": [{"id": "c6", "name": "transfer", "arguments": "{\"amount\": 900}"}]},
	  {"text": "second"}]}`, ap, &ran)
	ctx := context.Background()
	ana := h.Local(ctx, "ana")
	res, err := h.Door().Run(ctx, ana, loop.RunInput{SessionID: "s1", User: "ana", Messages: []loop.Message{loop.UserMessage("pay")}}, nil)
	if err != nil || res.Status != loop.StatusCompleted {
		t.Fatalf("run: %s/%s %v ran %v asked %v audit %v", res.Status, res.Reason, err, ran, ap.asked, approvalRecords(t, h))
	}
	if want := []string{"c1", "c2", "c3"}; !slices.Equal(ran, want) || !slices.Equal(ap.asked, []string{"c2"}) {
		t.Fatalf("ran %v asked %v, want ran %v asked [c2]", ran, ap.asked, want)
	}
	entries, _ := h.Store.Load(ctx, "s1")
	var tools []string
	for _, e := range entries {
		if m := e.Message; m != nil && m.Role == loop.RoleTool {
			tools = append(tools, m.ToolCallID+":"+m.Text())
		}
	}
	if want := []string{"c1:done c1", "c2:done c2", "c3:done c3",
		"c4:Error: permission denied for tool 'delete': deletes need an admin",
		`c5:Error: permission denied for tool 'transfer': approval rule "big-transfers" could not decide: rule "big-transfers": no such key: amount`}; !slices.Equal(tools, want) {
		t.Fatalf("tool messages:\n%s\nwant\n%s", strings.Join(tools, "\n"), strings.Join(want, "\n"))
	}

	grants, err := h.Grants(ctx)
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants %+v %v", grants, err)
	}
	g := grants[0]
	if g.Scope != loop.ScopeSession || g.Session != "s1" || g.Tool != "transfer" || g.By != "ana" || !g.Expires.After(g.Created) {
		t.Fatalf("grant %+v", g)
	}
	if err := h.RevokeGrant(ctx, g.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := h.RevokeGrant(ctx, g.ID, "ops"); err != ErrNoGrant {
		t.Fatalf("revoking twice: %v", err)
	}
	res, _ = h.Door().Run(ctx, ana, loop.RunInput{SessionID: "s1", User: "ana", Messages: []loop.Message{loop.UserMessage("again")}}, nil)
	if res.Status != loop.StatusInterrupted || len(ran) != 3 || !slices.Equal(ap.asked, []string{"c2", "c6"}) {
		t.Fatalf("after the revoke: %s/%s ran %v asked %v", res.Status, res.Reason, ran, ap.asked)
	}

	want := []string{
		"policy c2 ask by=approver rule=big-transfers",
		"ana c2 allow by=approver rule=big-transfers scope=session grant",
		"policy c3 allow by=grant rule=big-transfers grant",
		"policy c4 deny by=rule rule=no-deletes reason=deletes need an admin",
		`policy c5 deny by=rule rule=big-transfers reason=approval rule "big-transfers" could not decide: rule "big-transfers": no such key: amount`,
		"ops revoked",
		"policy c6 ask by=approver rule=big-transfers",
	}
	if got := approvalRecords(t, h); !slices.Equal(got, want) {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Its random id and its times (nanoseconds) are left out of the search: their digits
	// can hold "500" by chance. Both are checked above; what is left is what the grant keeps.
	kept := g
	kept.ID, kept.Created, kept.Expires = "", time.Time{}, time.Time{}
	b, _ := json.Marshal(kept)
	if strings.Contains(string(b), "500") || strings.Contains(string(b), "amount") {
		t.Fatalf("the grant keeps the call's arguments: %s", b)
	}
}
