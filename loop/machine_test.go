package loop

import (
	"strings"
	"testing"
)

// The state machine is total where it must be: from every live state a run can end
// (complete, fail, abort, interrupt), so an error anywhere has somewhere to go; and every
// state the table leads to is a state.
func TestMachineEveryLiveStateCanEnd(t *testing.T) {
	known := map[State]bool{StateIdle: true, StatePreparing: true, StateModelRunning: true, StateToolRunning: true,
		StateAwaitingHuman: true, StateCompleted: true, StateFailed: true, StateAborted: true}
	for from, row := range machine {
		for _, end := range []trigger{onFail, onAbort} {
			if _, ok := row[end]; !ok {
				t.Errorf("%s has no %s transition", from, end)
			}
		}
		for tr, to := range row {
			if !known[to] {
				t.Errorf("%s -%s-> unknown state %q", from, tr, to)
			}
		}
	}
	for _, s := range []State{StateCompleted, StateFailed, StateAborted} {
		if _, ok := machine[s]; ok {
			t.Errorf("terminal state %s has transitions", s)
		}
	}
}

// A trigger the table does not allow is a bug in the loop: on panics (the run's
// recover turns it into a failed run), and a finished run does not move at all.
func TestMachineRefusesAnIllegalTransition(t *testing.T) {
	r := &run{state: StateIdle}
	func() {
		defer func() {
			p := recover()
			if p == nil || !strings.Contains(p.(string), "no transition from idle on run_tools") {
				t.Fatalf("recovered %v", p)
			}
		}()
		r.on(onRunTools)
	}()
	r.state = StateCompleted
	r.on(onCallModel) // no panic, no change
	if r.state != StateCompleted {
		t.Fatalf("a finished run moved to %s", r.state)
	}
}

// Every transition the loop's own runs make is in the table: the status events of an
// approval round trip follow the machine, state by state.
func TestMachineStatusEventsOfAnApprovalRun(t *testing.T) {
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, echoTool()), ToolPolicy: ToolPolicy{RequireApproval: []string{"echo"}}, Approver: &answerApprover{ok: true}})
	_, evs := runCollect(t, a, userIn("s-machine", "go"))
	var got []string
	for _, s := range eventsOf[StatusData](evs) {
		got = append(got, string(s.State))
	}
	want := "preparing model_running tool_running awaiting_human tool_running model_running completed"
	if strings.Join(got, " ") != want {
		t.Fatalf("states %q, want %q", strings.Join(got, " "), want)
	}
}
