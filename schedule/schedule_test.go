package schedule

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustParse(t *testing.T, expr string, every time.Duration) Spec {
	t.Helper()
	s, err := Parse(expr, every)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse_RefusesWhatCannotFireTheSameOnEveryNode(t *testing.T) {
	for _, c := range []struct {
		expr  string
		every time.Duration
		want  string
	}{
		{"", 0, "give cron"},
		{"* * * * *", time.Hour, "not both"},
		{"@every 5m", 0, "every = "},
		{"0 0 30 2 *", 0, "matches no date"},
		{"61 * * * *", 0, "cron \"61 * * * *\""},
		{"* * * * * *", 0, "expected exactly 5 fields"},
		{"", 500 * time.Millisecond, "at least 1s"},
	} {
		_, err := Parse(c.expr, c.every)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %s) = %v, want an error with %q", c.expr, c.every, err, c.want)
		}
	}
	if _, err := ParsePolicy("later"); err == nil || !strings.Contains(err.Error(), `"skip" or "run_once"`) {
		t.Errorf("ParsePolicy(later) = %v", err)
	}
}

func TestInterval_TicksAreAlignedToAbsoluteTimeNotToTheStart(t *testing.T) {
	s := mustParse(t, "", time.Hour)
	for _, from := range []time.Time{t0.Add(time.Second), t0.Add(59 * time.Minute)} {
		if got := s.Next(from); !got.Equal(t0.Add(time.Hour)) {
			t.Errorf("Next(%s) = %s, want %s", from, got, t0.Add(time.Hour))
		}
	}
	if got := s.Next(t0); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("Next is strictly after: Next(%s) = %s", t0, got)
	}
}

func TestCron_TimeZonePrefixAndDescriptors(t *testing.T) {
	s := mustParse(t, "CRON_TZ=Europe/Paris 0 3 * * *", 0)
	if got := s.Next(t0); !got.Equal(time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)) { // 03:00 CET
		t.Errorf("Next = %s", got.UTC())
	}
	if got := mustParse(t, "@hourly", 0).Next(t0); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("@hourly Next = %s", got)
	}
}

func TestLatest_FindsTheLastTickAfterMonthsWithoutStepping(t *testing.T) {
	s := mustParse(t, "", time.Second)
	now := t0.Add(90*24*time.Hour + 1500*time.Millisecond)
	got, ok := Latest(s, t0, now)
	if !ok || !got.Equal(t0.Add(90*24*time.Hour+time.Second)) {
		t.Fatalf("Latest = %s %v", got, ok)
	}
	if _, ok := Latest(s, now, now); ok {
		t.Fatal("a tick due in (now, now]")
	}
	c := mustParse(t, "0 3 * * *", 0) // daily: the window must widen past a day
	got, ok = Latest(c, t0.Add(-30*24*time.Hour), t0)
	if !ok || !got.Equal(time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)) {
		t.Fatalf("cron Latest = %s %v", got, ok)
	}
}

func TestDecide_OnTimeFiresMissedFollowsThePolicy(t *testing.T) {
	s := mustParse(t, "", time.Minute)
	started := t0.Add(10*time.Minute + 500*time.Millisecond)
	// Running since started: the tick at +11m is on time, whatever the policy.
	for _, p := range []Policy{Skip, RunOnce} {
		d, ok := Decide(s, p, started, started, t0.Add(11*time.Minute+time.Second))
		if !ok || !d.Fire || d.Missed || !d.Tick.Equal(t0.Add(11*time.Minute)) {
			t.Errorf("%s: on time: %+v %v", p, d, ok)
		}
	}
	// Down from +2m to +10m: ticks +3m…+10m missed; skip drops them, run_once fires one.
	d, ok := Decide(s, Skip, t0.Add(2*time.Minute), started, started.Add(time.Second))
	if !ok || d.Fire || !d.Missed || !d.Handled.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("skip: %+v", d)
	}
	d, ok = Decide(s, RunOnce, t0.Add(2*time.Minute), started, started.Add(time.Second))
	if !ok || !d.Fire || !d.Missed || !d.Tick.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("run_once: %+v", d)
	}
	// A node that wakes three ticks late while running fires once, not three times.
	d, ok = Decide(s, Skip, t0.Add(11*time.Minute), started, t0.Add(14*time.Minute+time.Second))
	if !ok || !d.Fire || d.Missed || !d.Tick.Equal(t0.Add(14*time.Minute)) {
		t.Errorf("late wake: %+v", d)
	}
}

// fakeClock advances only when the test says; waiting signals each After.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiting chan struct{}
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, waiting: make(chan struct{}, 64)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	c.waiting <- struct{}{}
	return ch
}

// set moves the clock to now and fires the timers due.
func (c *fakeClock) set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.at.After(now) {
			tm.c <- now
		} else {
			kept = append(kept, tm)
		}
	}
	c.timers = kept
}

type memState struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (s *memState) Last(_ context.Context, name string) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.last[name]
	return t, ok, nil
}

func (s *memState) SetLast(_ context.Context, name string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[name] = t
	return nil
}

type fire struct {
	name   string
	tick   time.Time
	missed bool
}

// runFor starts a Scheduler on clock and state and returns its fires and a stop.
func runFor(t *testing.T, clock *fakeClock, st *memState, entries ...Entry) (chan fire, func()) {
	t.Helper()
	fires := make(chan fire, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Entries: entries, State: st, Clock: clock, Fire: func(_ context.Context, name string, tick time.Time, missed bool) error {
			fires <- fire{name, tick, missed}
			return nil
		}})
	}()
	return fires, func() { cancel(); <-done }
}

func waitFor(t *testing.T, c *fakeClock) {
	t.Helper()
	select {
	case <-c.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler never waited for a tick")
	}
}

func noFire(t *testing.T, fires chan fire) {
	t.Helper()
	select {
	case f := <-fires:
		t.Fatalf("fired %+v", f)
	default:
	}
}

func TestScheduler_FiresEachTickOnceAndRecordsIt(t *testing.T) {
	clock, st := newFakeClock(t0.Add(30*time.Second)), &memState{last: map[string]time.Time{}}
	fires, stop := runFor(t, clock, st, Entry{Name: "digest", Spec: Interval(time.Minute), Missed: Skip})
	defer stop()
	waitFor(t, clock)
	noFire(t, fires) // the first start misses nothing
	clock.set(t0.Add(time.Minute))
	if f := <-fires; f.name != "digest" || !f.tick.Equal(t0.Add(time.Minute)) || f.missed {
		t.Fatalf("fire: %+v", f)
	}
	waitFor(t, clock)
	clock.set(t0.Add(3*time.Minute + time.Second)) // woke two ticks late: one fire
	if f := <-fires; !f.tick.Equal(t0.Add(3*time.Minute)) || f.missed {
		t.Fatalf("late fire: %+v", f)
	}
	waitFor(t, clock)
	noFire(t, fires)
	if last, _, _ := st.Last(context.Background(), "digest"); !last.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("recorded %s", last)
	}
}

func TestScheduler_MissedTicksWhileDownFollowThePolicy(t *testing.T) {
	for _, c := range []struct {
		policy Policy
		fires  bool
	}{{Skip, false}, {RunOnce, true}} {
		t.Run(string(c.policy), func(t *testing.T) {
			// Last handled at +1m; the node comes back at +5m30s: +2m…+5m were missed.
			st := &memState{last: map[string]time.Time{"digest": t0.Add(time.Minute)}}
			clock := newFakeClock(t0.Add(5*time.Minute + 30*time.Second))
			fires, stop := runFor(t, clock, st, Entry{Name: "digest", Spec: Interval(time.Minute), Missed: c.policy})
			defer stop()
			if c.fires {
				if f := <-fires; !f.tick.Equal(t0.Add(5*time.Minute)) || !f.missed {
					t.Fatalf("run_once fired %+v", f)
				}
			}
			waitFor(t, clock)
			noFire(t, fires)
			if last, _, _ := st.Last(context.Background(), "digest"); !last.Equal(t0.Add(5 * time.Minute)) {
				t.Fatalf("missed ticks not recorded handled: %s", last)
			}
			clock.set(t0.Add(6 * time.Minute)) // the next tick is on time either way
			if f := <-fires; !f.tick.Equal(t0.Add(6*time.Minute)) || f.missed {
				t.Fatalf("next fire %+v", f)
			}
		})
	}
}
