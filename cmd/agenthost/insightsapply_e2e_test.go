package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// suggestion is `insights suggest --json`'s entry, as a user's script reads it.
type suggestion struct {
	ID, Kind, Target, Evidence string
	Examples                   []struct{ Session, Run string }
}

func suggestionsOf(t *testing.T, e *agentEnv) []suggestion {
	t.Helper()
	r := e.agenthost(t, "insights", "suggest", "--json")
	var out []suggestion
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("suggest --json: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return out
}

// theOne is the only suggestion of kind, or the test fails.
func theOne(t *testing.T, sug []suggestion, kind string) suggestion {
	t.Helper()
	var found []suggestion
	for _, s := range sug {
		if s.Kind == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s suggestion: %+v", kind, sug)
	}
	return found[0]
}

func appliedRecords(t *testing.T, e *agentEnv) []audit.Record {
	t.Helper()
	r := e.agenthost(t, "audit", "list", "--json")
	var recs, out []audit.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	for _, rec := range recs {
		if rec.Action == "insights.apply" {
			out = append(out, rec)
		}
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func examplesOf(s suggestion) string {
	var ex []string
	for _, x := range s.Examples {
		ex = append(ex, x.Session+"/"+x.Run)
	}
	return strings.Join(ex, " ")
}

// capEnv is a manifest whose max_iterations stops two runs (its line written oddly,
// with a comment): each run (a process of its own: the script starts again) calls a
// tool, then answers, one iteration more than the limit allows.
func capEnv(t *testing.T) *agentEnv {
	e := newEnv(t, "max_iterations   =  1   # tight, on purpose", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "two"}]}`})
	for _, s := range []string{"t1", "t2"} {
		if r := e.agenthost(t, "run", "--new", "--session", s, "1+1?"); r.code == 0 {
			t.Fatalf("run %s was not stopped by max_iterations: %s", s, r.stdout)
		}
	}
	return e
}

// A cap suggestion applied raises the limit in place: the dry run prints the diff and
// writes nothing; the apply changes that one value (its comment and spacing kept),
// writes the audit record (who, the suggestion's id and evidence, the change, the file
// before and after) before the file, and the next run completes where the runs before
// stopped.
func TestE2E_InsightsApplyRaisesACapInPlaceAuditedAndTheNextRunUsesIt(t *testing.T) {
	e := capEnv(t)
	before := readFile(t, e.manifest)
	s := theOne(t, suggestionsOf(t, e), "cap")
	if s.Target != "[agent] max_iterations" {
		t.Fatalf("cap %+v", s)
	}
	line := strings.Count(before[:strings.Index(before, "max_iterations   =")], "\n") + 1
	diff := fmt.Sprintf("%s [cap] [agent] max_iterations = 2\n  because %s\n--- %s\n+++ %s\n@@ line %d @@\n"+
		"-max_iterations   =  1   # tight, on purpose\n+max_iterations   =  2   # tight, on purpose\n", s.ID, s.Evidence, e.manifest, e.manifest, line)
	r := e.agenthost(t, "insights", "apply", s.ID, "--dry-run")
	if r.code != 0 || r.stdout != diff+"dry run: nothing written\n" {
		t.Fatalf("dry run: exit %d\n%s\nwant:\n%s\n%s", r.code, r.stdout, diff, r.stderr)
	}
	if readFile(t, e.manifest) != before || len(appliedRecords(t, e)) != 0 {
		t.Fatal("the dry run wrote")
	}
	written, _ := filepath.EvalSymlinks(e.manifest)
	r = e.agenthost(t, "insights", "apply", s.ID)
	if r.code != 0 || r.stdout != diff+"applied to "+written+": the next run uses it\n" {
		t.Fatalf("apply: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	after := strings.Replace(before, "max_iterations   =  1   #", "max_iterations   =  2   #", 1)
	if got := readFile(t, e.manifest); got != after {
		t.Fatalf("agent.toml:\n%s\nwant:\n%s", got, after)
	}
	recs := appliedRecords(t, e)
	want := map[string]string{"kind": "cap", "target": "[agent] max_iterations", "evidence": s.Evidence, "examples": examplesOf(s),
		"change": "[agent] max_iterations = 2", "file": written,
		"before": "max_iterations   =  1   # tight, on purpose\n", "after": "max_iterations   =  2   # tight, on purpose\n",
		"before_sha256": sha256Hex([]byte(before)), "after_sha256": sha256Hex([]byte(after))}
	if len(recs) != 1 || recs[0].Actor != "cli" || recs[0].Target != s.ID || !reflect.DeepEqual(recs[0].Detail, want) {
		t.Fatalf("audit records %+v\nwant detail %v", recs, want)
	}
	if s.Evidence != "2 runs ended incomplete/max_iterations, costing $0.0000" || len(s.Examples) != 2 {
		t.Fatalf("evidence %+v", s)
	}
	r = e.agenthost(t, "run", "--new", "--session", "t3", "1+1?")
	if r.code != 0 || !strings.Contains(r.stdout, "two") {
		t.Fatalf("the next run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// A prompt suggestion is applied as an addition to [agent] system_prompt in the user's
// words (--text; without it, refused), and the next run's model gets it. An id no
// suggestion has is a usage error; an id computed before the file changed underneath is
// refused, naming the id it has now, and nothing is written or audited.
func TestE2E_InsightsApplyAddsToThePromptAndRefusesAStaleOrUnknownID(t *testing.T) {
	text := `When the key is refused, say "bad key" and stop.`
	// Each run is a process of its own, so each starts the script again: it fails while
	// the system prompt lacks the addition.
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"expect": {"system_contains": "say \"bad key\" and stop."}, "text": "told"}]}`})
	for _, s := range []string{"t1", "t2", "t3"} {
		if r := e.agenthost(t, "run", "--new", "--session", s, "hi"); r.code != 1 {
			t.Fatalf("run %s: exit %d %s", s, r.code, r.stderr)
		}
	}
	if r := e.agenthost(t, "insights", "apply", "deadbeef-00000000"); r.code != 2 || !strings.Contains(r.stderr, `no such suggestion "deadbeef-00000000" in the last 7d`) {
		t.Fatalf("unknown id: exit %d %s", r.code, r.stderr)
	}
	s := theOne(t, suggestionsOf(t, e), "prompt")
	if r := e.agenthost(t, "insights", "apply", s.ID); r.code != 2 || !strings.Contains(r.stderr, "takes --text") {
		t.Fatalf("no --text: exit %d %s", r.code, r.stderr)
	}
	appendManifest(t, e.manifest, "# edited by hand\n")
	touched := readFile(t, e.manifest)
	r := e.agenthost(t, "insights", "apply", s.ID, "--text", text)
	now := theOne(t, suggestionsOf(t, e), "prompt")
	if r.code != 1 || !strings.Contains(r.stderr, "suggestion "+s.ID+": the manifest changed since the suggestion was computed (its id is now "+now.ID+": review it again)") {
		t.Fatalf("stale id: exit %d %s", r.code, r.stderr)
	}
	if readFile(t, e.manifest) != touched || len(appliedRecords(t, e)) != 0 {
		t.Fatal("a stale apply wrote")
	}
	if r := e.agenthost(t, "insights", "apply", now.ID, "--text", "bad \xff"); r.code != 2 || !strings.Contains(r.stderr, "--text is not valid UTF-8") {
		t.Fatalf("invalid UTF-8: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "insights", "apply", now.ID, "--text", text); r.code != 0 {
		t.Fatalf("apply: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	want := strings.Replace(touched, `system_prompt = "You compute."`, "system_prompt = \"\"\"\nYou compute.\n\n"+`When the key is refused, say \"bad key\" and stop."""`, 1)
	if got := readFile(t, e.manifest); got != want {
		t.Fatalf("agent.toml:\n%s\nwant:\n%s", got, want)
	}
	recs := appliedRecords(t, e)
	if len(recs) != 1 || recs[0].Target != now.ID || recs[0].Detail["change"] != `[agent] system_prompt += "When the key is refused, say \"bad key\" and stop."` ||
		recs[0].Detail["kind"] != "prompt" || recs[0].Detail["evidence"] != now.Evidence || now.Evidence != "3 runs ended failed/error with it" || recs[0].Detail["examples"] != examplesOf(now) {
		t.Fatalf("audit records %+v", recs)
	}
	if r := e.agenthost(t, "run", "--new", "--session", "t4", "hi"); r.code != 0 || !strings.Contains(r.stdout, "told") {
		t.Fatalf("the next run did not get the addition: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// A tool that fails often is turned off by a deny rule put first among the rules, on
// an agent.toml that is a symlink: the link stays, its target is written. Four applies
// of the same suggestion at once: one writes (one audit record, one rule), the others
// are refused because the file changed. The next run's call of the tool is refused.
func TestE2E_InsightsApplyDisablesAToolThroughASymlinkOnceUnderConcurrentApplies(t *testing.T) {
	var calls []string
	for i, bad := range []string{"", "1+", "(", "*", "1/"} { // five calls that fail, each different
		calls = append(calls, fmt.Sprintf(`{"id": "c%d", "name": "calc", "arguments": "{\"expression\":\"%s\"}"}`, i, bad))
	}
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"tool_calls": [` + strings.Join(calls, ",") + `]}, {"text": "no"}]}`})
	conf := filepath.Join(e.dir, "conf")
	os.Mkdir(conf, 0o755)
	real := filepath.Join(conf, "agent.toml")
	if err := os.Rename(e.manifest, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf/agent.toml", e.manifest); err != nil {
		t.Fatal(err)
	}
	if r := e.agenthost(t, "run", "--new", "--session", "t1", "calc"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	before := readFile(t, real)
	s := theOne(t, suggestionsOf(t, e), "fallback")
	if s.Target != "calc" || !strings.HasPrefix(s.Evidence, "5 of its 5 calls failed (100%)") {
		t.Fatalf("fallback %+v", s)
	}
	if r := e.agenthost(t, "insights", "apply", s.ID); r.code != 2 || !strings.Contains(r.stderr, "takes --fallback TOOL (the tool that stands in) or --disable") {
		t.Fatalf("no choice: exit %d %s", r.code, r.stderr)
	}
	r := e.agenthost(t, "insights", "apply", s.ID, "--fallback", "calc_backup", "--dry-run")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "+\n+[tools.calc]\n+fallback = [\"calc_backup\"]\ndry run: nothing written\n") {
		t.Fatalf("--fallback dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = e.agenthost(t, "insights", "apply", s.ID, "--disable") })
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch {
		case r.code == 0:
			ok++
		case r.code != 1 || !strings.Contains(r.stderr, "changed since the"):
			t.Fatalf("a concurrent apply: exit %d %s", r.code, r.stderr)
		}
	}
	rule := fmt.Sprintf("\n[[approvals]]\nname = \"insights-disable-calc\"\nwhen = \"tool == \\\"calc\\\"\"\ndecision = \"deny\"\nreason = %q\n", "calc is turned off: it failed too often (insights apply "+s.ID+")")
	if got := readFile(t, real); ok != 1 || got != before+rule {
		t.Fatalf("%d applies succeeded; agent.toml:\n%s\nwant:\n%s", ok, got, before+rule)
	}
	if fi, err := os.Lstat(e.manifest); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("agent.toml is no longer a symlink: %v", err)
	}
	if recs := appliedRecords(t, e); len(recs) != 1 || recs[0].Detail["file"] != real || recs[0].Detail["change"] != "[[approvals]] deny calc (first rule)" ||
		recs[0].Detail["after"] != rule || recs[0].Detail["before"] != "" {
		t.Fatalf("audit records %+v", recs)
	}
	r = e.agenthost(t, "run", "--json", "--new", "--session", "t2", "calc")
	var refused []string
	for _, ev := range events(t, r.stdout) {
		if d, ok := ev.Data.(*loop.ToolResultData); ok {
			refused = append(refused, d.Name+":"+d.Refused)
		}
	}
	if d := "calc:" + loop.RefusedDenied; r.code != 0 || strings.Join(refused, " ") != strings.Repeat(d+" ", 4)+d {
		t.Fatalf("the next run: exit %d %v %s", r.code, refused, r.stderr)
	}
}

// Plan revisions recorded by real plan-mode runs are summed per agent in `insights`
// (plan runs, runs revised, revisions, mean per run), and an agent whose plans are
// revised once a run is suggested for review: a suggestion with nothing to apply.
func TestE2E_InsightsAggregatesPlanRevisionsPerAgentAndSuggestsAReview(t *testing.T) {
	e := newEnv(t, "mode = \"plan\"\n[agent.plan]\nmax_replans = 2", "", [2]string{"scripted", `{"turns": [` + strings.Join([]string{
		plan(calcStep("1", "6*")), evaluation("replan", "step 1 failed", ""),
		plan(calcStep("1b", "6*7")), evaluation("done", "computed", "42"),
	}, ",") + `]}`})
	for _, s := range []string{"p1", "p2", "p3"} {
		if r := e.agenthost(t, "run", "--new", "--session", s, "compute 6*7"); r.code != 0 {
			t.Fatalf("run %s: exit %d %s", s, r.code, r.stderr)
		}
	}
	r := e.agenthost(t, "insights", "--json")
	var rep struct {
		Plans []struct {
			Agent       string
			Runs        int     `json:"plan_runs"`
			RevisedRuns int     `json:"revised_runs"`
			Revisions   int     `json:"revisions"`
			Mean        float64 `json:"mean_revisions"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Plans) != 1 ||
		fmt.Sprintf("%+v", rep.Plans[0]) != "{Agent:e2e Runs:3 RevisedRuns:3 Revisions:3 Mean:1}" {
		t.Fatalf("insights plans: %v %+v\n%s", err, rep.Plans, r.stdout)
	}
	if r := e.agenthost(t, "insights"); r.code != 0 || !strings.Contains(r.stdout, "AGENT  PLAN RUNS  REVISED  REVISIONS  MEAN\ne2e    3          3        3          1.00\n") {
		t.Fatalf("insights: exit %d\n%s", r.code, r.stdout)
	}
	s := theOne(t, suggestionsOf(t, e), "plans")
	if s.Target != "e2e" || s.Evidence != "3 of its 3 plan runs were revised, 3 revisions in all (1.00 a run)" {
		t.Fatalf("plans suggestion %+v", s)
	}
	if r := e.agenthost(t, "insights", "apply", s.ID); r.code != 2 || !strings.Contains(r.stderr, "a plans suggestion is a review for you to make: it has nothing to apply") {
		t.Fatalf("apply a review: exit %d %s", r.code, r.stderr)
	}
}
