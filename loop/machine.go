package loop

import "fmt"

// trigger is what a run is about to do, or what just happened to it. The places that do
// the work name the trigger; the table below alone decides the state that follows, and
// (*run).on alone changes the state, so the whole state machine is this file.
type trigger string

const (
	onPrepare   trigger = "prepare"    // load the session, store the input (L1, L14)
	onCallModel trigger = "call_model" // a model call: the run's, a summary (L9), structured output (L10)
	onRunTools  trigger = "run_tools"  // execute a batch of tool calls (L5)
	onAskHuman  trigger = "ask_human"  // wait for an Approver (L6)
	onAnswered  trigger = "answered"   // the Approver answered: the batch goes on
	onComplete  trigger = "complete"   // ended completed or incomplete
	onFail      trigger = "fail"
	onAbort     trigger = "abort"
	onInterrupt trigger = "interrupt" // ended interrupted: the state stays awaiting_human
)

// machine is the run's state machine: for each state, the state each trigger leads to.
// A trigger missing from a state's row is a bug in the loop (on panics, and the run
// fails with an internal error). Terminal states have no row.
//
//	idle ─prepare→ preparing ─call_model→ model_running ─run_tools→ tool_running
//	tool_running ─ask_human→ awaiting_human ─answered→ tool_running
//	tool_running ─call_model→ model_running      preparing ─run_tools→ tool_running (L14)
//	any live state ─complete→ completed, ─fail→ failed, ─abort→ aborted
//	awaiting_human ─interrupt→ awaiting_human (the run ends waiting for a human)
var machine = map[State]map[trigger]State{
	StateIdle: {onPrepare: StatePreparing, onFail: StateFailed, onAbort: StateAborted},
	StatePreparing: {onCallModel: StateModelRunning, onRunTools: StateToolRunning,
		onComplete: StateCompleted, onFail: StateFailed, onAbort: StateAborted, onInterrupt: StatePreparing},
	StateModelRunning: {onCallModel: StateModelRunning, onRunTools: StateToolRunning,
		onComplete: StateCompleted, onFail: StateFailed, onAbort: StateAborted, onInterrupt: StateModelRunning},
	StateToolRunning: {onCallModel: StateModelRunning, onRunTools: StateToolRunning, onAskHuman: StateAwaitingHuman,
		onComplete: StateCompleted, onFail: StateFailed, onAbort: StateAborted, onInterrupt: StateToolRunning},
	StateAwaitingHuman: {onAnswered: StateToolRunning, onInterrupt: StateAwaitingHuman,
		onComplete: StateCompleted, onFail: StateFailed, onAbort: StateAborted},
}

// on moves the run along the machine and emits a status event when the state changes.
// It is the only place a run's state changes.
func (r *run) on(t trigger) {
	row, live := machine[r.state]
	if !live {
		return // ended: nothing moves a finished run
	}
	to, ok := row[t]
	if !ok {
		panic(fmt.Sprintf("loop: no transition from %s on %s", r.state, t))
	}
	if r.state == to {
		return
	}
	r.state = to
	r.journal.emit(EventStatus, r.journal.pl.status.put(StatusData{State: to}))
}
