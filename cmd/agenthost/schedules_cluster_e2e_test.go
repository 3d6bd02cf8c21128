package main

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Two `serve --workers` nodes on one PostgreSQL, both running the scheduler: each tick of
// a 2s schedule is claimed by exactly one node (the other's claim finds it taken) and
// fired once, as its user, audited; node A is killed (SIGKILL) and the ticks go on
// being fired, once each, by B.
func TestE2E_ScheduleFiresOnOneNodeOfTwoAcrossANodeKill(t *testing.T) {
	e := clusterEnv(t, "", [2]string{"scripted", scheduleFixture})
	e.withSchedules(t, `[[schedules]]
name = "digest"
every = "2s"
user = "alice"
prompt = "summarise my day"

[[schedules]]
name = "catchup"
every = "2s"
user = "alice"
prompt = "catch up"
missed = "run_once"
`)
	if r := e.agenthost(t, "users", "add", "alice", "--role", "user"); r.code != 0 {
		t.Fatalf("users add: %d %s", r.code, r.stderr)
	}
	a := e.serve(t, "--workers", "2")
	b := e.serve(t, "--workers", "2")
	claimed := regexp.MustCompile(`schedule digest: claimed tick (\S+) for the cluster`)
	fired := regexp.MustCompile(`msg="schedule fired" schedule=digest tick=(\S+) status=completed`)
	// Both nodes are up for a few ticks.
	for deadline := time.Now().Add(readyBound); len(claimed.FindAllString(a.log()+b.log(), -1)) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("three ticks never claimed:\nA:\n%s\nB:\n%s", a.log(), b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	killed := time.Now()
	aLog := a.log()
	// B alone fires the ticks after the kill.
	var after []string
	for deadline := time.Now().Add(readyBound); len(after) < 3; {
		after = after[:0]
		for _, m := range fired.FindAllStringSubmatch(b.log(), -1) {
			if tick, _ := time.Parse(time.RFC3339, m[1]); tick.After(killed) {
				after = append(after, m[1])
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("B fired %v after the kill:\n%s", after, b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.wait(t)
	digestRecs := fireRecords(t, e)["digest"] // the ticks of A and B
	// Both nodes down over a tick: the node that comes back claims one catch-up fire of
	// the run_once schedule, which a worker runs, audited as missed; digest skips.
	untilTickPasses(time.Now(), 2*time.Second)
	c := e.serve(t, "--workers", "2")
	waitLogRe(t, c, regexp.MustCompile(`schedule digest: skipped the tick\(s\) missed up to`))
	caught := func() (n int) {
		for _, rec := range fireRecords(t, e)["catchup"] {
			if rec.Detail["missed"] == "true" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(readyBound); caught() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no catch-up fire after the cluster was down:\n%s", c.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.wait(t)
	if n := caught(); n != 1 {
		t.Fatalf("run_once caught up %d times after the cluster was down", n)
	}

	// Never both: a tick is claimed by one node, fired once, audited once.
	claims := map[string]string{}
	for node, log := range map[string]string{"A": aLog, "B": b.log()} {
		for _, m := range claimed.FindAllStringSubmatch(log, -1) {
			if other, dup := claims[m[1]]; dup {
				t.Fatalf("tick %s claimed by %s and %s", m[1], other, node)
			}
			claims[m[1]] = node
		}
	}
	byNode := map[string]int{}
	for _, n := range claims {
		byNode[n]++
	}
	if byNode["A"] == 0 || byNode["B"] == 0 {
		t.Logf("claims by node: %v (which node claims a tick is a race both may win)", byNode)
	}
	runs := map[string]int{}
	for _, rec := range digestRecs {
		runs[rec.Detail["tick"]]++
		if rec.Detail["actor_role"] != "user" || rec.Detail["actor_id"] == "" {
			t.Fatalf("a fire not run as alice: %+v", rec)
		}
	}
	for tick, n := range runs {
		if n != 1 {
			t.Fatalf("tick %s ran %d times", tick, n)
		}
		if claims[tick] == "" {
			t.Fatalf("tick %s ran without a claim in either log", tick)
		}
	}
	for _, tick := range after {
		if runs[tick] != 1 {
			t.Fatalf("tick %s fired by B has %d audited runs", tick, runs[tick])
		}
	}
}
