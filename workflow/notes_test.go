package workflow

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A step's end is taken from its call's run's note only when that note is one: the
// latest completed run's, a step end that says ok, later than an earlier failure. A
// note that does not decode (the file written by hand), says anything but ok, or
// belongs to a run that did not complete is no end: the step runs again, as one with
// no row would.
func TestANoteIsAStepsEndOnlyWhenItIsACompletedCallsOkEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ok := `{"status":"ok","started":"2026-11-28T10:00:01Z","ended":"2026-11-28T10:00:02Z","output":"a"}`
	run := func(status loop.Status, note string) loop.RunRecord {
		return loop.RunRecord{ID: "r", Status: status, Note: note}
	}
	failedBefore := &StepRecord{Status: StatusFailed, Ended: t0}
	failedAfter := &StepRecord{Status: StatusFailed, Ended: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name string
		runs []loop.RunRecord
		sr   *StepRecord
		want bool
	}{
		{"an ok note, no row", []loop.RunRecord{run(loop.StatusCompleted, ok)}, nil, true},
		{"an ok note after a failed row", []loop.RunRecord{run(loop.StatusCompleted, ok)}, failedBefore, true},
		{"an ok note before a later failure", []loop.RunRecord{run(loop.StatusCompleted, ok)}, failedAfter, false},
		{"a running row", []loop.RunRecord{run(loop.StatusCompleted, ok)}, &StepRecord{Status: StatusRunning, Started: t0}, true},
		{"not JSON", []loop.RunRecord{run(loop.StatusCompleted, "\xff{")}, nil, false},
		{"a failed end", []loop.RunRecord{run(loop.StatusCompleted, `{"status":"failed"}`)}, nil, false},
		{"a run not completed", []loop.RunRecord{run(loop.StatusAborted, ok)}, nil, false},
		{"no note", []loop.RunRecord{run(loop.StatusCompleted, "")}, nil, false},
		{"the latest noted run wins", []loop.RunRecord{run(loop.StatusCompleted, ok), run(loop.StatusCompleted, "")}, nil, true},
	} {
		end := noted(tc.runs, tc.sr)
		if (end != nil) != tc.want || (end != nil && (end.Status != StatusOK || end.Output != "a")) {
			t.Errorf("%s: %+v, want an end: %v", tc.name, end, tc.want)
		}
	}
}
