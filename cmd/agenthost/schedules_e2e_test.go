package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
)

// scheduleFixture answers every session once: each fire is a session of its own.
const scheduleFixture = `{"per_session": true, "turns": [{"text": "digest done"}]}`

// withSchedules appends [[schedules]] tables to the manifest.
func (e *agentEnv) withSchedules(t *testing.T, tables string) {
	t.Helper()
	b, err := os.ReadFile(e.manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.manifest, append(b, []byte("\n"+tables)...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fireRecords are the run.start audit records of schedule fires, by schedule.
func fireRecords(t *testing.T, e *agentEnv) map[string][]audit.Record {
	t.Helper()
	r := e.agenthost(t, "audit", "list", "--json")
	var recs []audit.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	out := map[string][]audit.Record{}
	for _, rec := range recs {
		if rec.Action == audit.ActionRunStart && rec.Detail["schedule"] != "" {
			out[rec.Detail["schedule"]] = append(out[rec.Detail["schedule"]], rec)
		}
	}
	return out
}

// waitLogRe polls a server's log until re matches it (a hang guard bounds the wait).
func waitLogRe(t *testing.T, s *served, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(readyBound); ; {
		if m := re.FindStringSubmatch(s.log()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log:\n%s", re, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// untilTickPasses waits until a tick of the every grid falls after from.
func untilTickPasses(from time.Time, every time.Duration) {
	tick := from.Truncate(every).Add(every)
	for time.Now().Before(tick.Add(100 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
}

// One serve node: each schedule fires as its user, through the door (a run.start audit
// record naming the schedule, the tick and the user); a schedule whose user does not
// exist never runs; stopped over a tick, the node skips it under missed = "skip" and
// fires it once under "run_once"; `schedules list` and GET /v1/schedules show the next
// fire, and `schedules run` fires one now.
func TestE2E_SchedulesFireAsTheirUserAndMissedTicksFollowThePolicy(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", scheduleFixture})
	e.withSchedules(t, `[[schedules]]
name = "skipper"
every = "2s"
user = "alice"
prompt = "summarise my day"
missed = "skip"

[[schedules]]
name = "catcher"
every = "2s"
user = "alice"
prompt = "summarise my day"
missed = "run_once"

[workflows.sums]
steps = [{ id = "c", tool = "calc", arguments = { expression = "6*7" } }]

[[schedules]]
name = "sums"
every = "2s"
user = "alice"
workflow = "sums"

[[schedules]]
name = "ghost"
every = "2s"
user = "nobody"
prompt = "never runs"
`)
	if r := e.agenthost(t, "users", "add", "alice", "--role", "user"); r.code != 0 {
		t.Fatalf("users add: %d %s", r.code, r.stderr)
	}
	ops := e.agenthost(t, "users", "add", "ops", "--role", "operator")
	if ops.code != 0 {
		t.Fatalf("users add: %d %s", ops.code, ops.stderr)
	}
	s := e.serve(t)
	waitLogRe(t, s, regexp.MustCompile(`schedule catcher: fired tick \S+ as alice: session sched-catcher-\d+ run fire completed`))
	waitLogRe(t, s, regexp.MustCompile(`schedule skipper: fired tick`))
	waitLogRe(t, s, regexp.MustCompile(`schedule sums: fired tick \S+ as alice: session sched-sums-\d+ run sched-sums-\d+ completed`))
	waitLogRe(t, s, regexp.MustCompile(`schedule ghost: fire \S+: schedule ghost: user "nobody": no such user`))

	req, _ := http.NewRequest("GET", s.base+"/v1/schedules", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(ops.stdout))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Schedules []struct {
			Name string     `json:"name"`
			Next *time.Time `json:"next_fire"`
			Last *time.Time `json:"last_tick"`
		} `json:"schedules"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &listed); err != nil || len(listed.Schedules) != 4 || listed.Schedules[1].Name != "catcher" ||
		listed.Schedules[1].Next == nil || listed.Schedules[1].Last == nil || !listed.Schedules[1].Next.After(*listed.Schedules[1].Last) {
		t.Fatalf("GET /v1/schedules: %d %s", resp.StatusCode, b)
	}

	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.wait(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
	before := fireRecords(t, e)
	untilTickPasses(time.Now(), 2*time.Second) // down over a tick
	s = e.serve(t)
	missed := waitLogRe(t, s, regexp.MustCompile(`schedule catcher: fired tick (\S+) as alice`))[1]
	waitLogRe(t, s, regexp.MustCompile(`schedule skipper: skipped the tick\(s\) missed up to \S+ \(missed = "skip"\)`))
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)

	fires := fireRecords(t, e)
	if len(fires["ghost"]) != 0 {
		t.Fatalf("a schedule whose user does not exist ran: %+v", fires["ghost"])
	}
	var caught, skippedMissed int
	for _, rec := range fires["catcher"] {
		if rec.Detail["missed"] == "true" {
			caught++
			if rec.Detail["tick"] != missed || rec.Detail["actor_role"] != "user" || rec.Detail["actor_id"] == "" {
				t.Fatalf("the missed fire's record: %+v (tick %s)", rec, missed)
			}
		}
	}
	for _, rec := range fires["skipper"] {
		if rec.Detail["missed"] == "true" {
			skippedMissed++
		}
	}
	if caught != 1 || skippedMissed != 0 || len(before["catcher"]) == 0 {
		t.Fatalf("run_once fired %d missed tick(s), skip %d; records %+v", caught, skippedMissed, fires)
	}
	// Each tick fired once: no tick has two run.start records.
	for name, recs := range fires {
		seen := map[string]bool{}
		for _, rec := range recs {
			if seen[rec.Detail["tick"]] {
				t.Fatalf("%s fired tick %s twice", name, rec.Detail["tick"])
			}
			seen[rec.Detail["tick"]] = true
		}
	}

	// A workflow fire is audited as a workflow run of its user, naming the schedule.
	var recs []audit.Record
	json.Unmarshal([]byte(e.agenthost(t, "audit", "list", "--json").stdout), &recs)
	wfRuns := 0
	for _, rec := range recs {
		if rec.Action == audit.ActionWorkflowRun && rec.Detail["schedule"] == "sums" {
			wfRuns++
			if rec.Actor != "alice" || rec.Detail["actor_role"] != "user" || !strings.Contains(rec.Target, "sched-sums-") {
				t.Fatalf("workflow fire record: %+v", rec)
			}
		}
	}
	if wfRuns == 0 {
		t.Fatal("no workflow.run record of the sums schedule")
	}
	r := e.agenthost(t, "schedules", "list")
	if r.code != 0 || !regexp.MustCompile(`(?m)^catcher\s+every 2s\s+alice\s+prompt\s+run_once\s+\d{4}-\S+Z\s+\d{4}-\S+Z$`).MatchString(r.stdout) {
		t.Fatalf("schedules list: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "schedules", "run", "skipper")
	var fired struct{ Schedule, User, Session, Run, Status string }
	if err := json.Unmarshal([]byte(r.stdout), &fired); err != nil || r.code != 0 || fired.Status != "completed" || fired.User != "alice" {
		t.Fatalf("schedules run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "show", fired.Session); !strings.Contains(r.stdout, "digest done") {
		t.Fatalf("the fire's session: %s %s", r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "schedules", "run", "ghost"); r.code != 1 || !strings.Contains(r.stderr, `user "nobody": no such user`) {
		t.Fatalf("schedules run ghost: %d %s", r.code, r.stderr)
	}
}
