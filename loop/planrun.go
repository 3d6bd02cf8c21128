package loop

import (
	"fmt"
	"strings"
	"time"
)

// planLoop is a plan-mode run (plan.go): plan, execute each step (monitoring its
// outcome), evaluate, and replan, within the run's limits. A run that continues a
// session whose plan was cut short (a process killed mid-plan, an approval awaited)
// resumes that plan: steps with a stored outcome are not executed again. Like iterate,
// it is one loop over decisions: each revision returns its next, and finish performs
// the ending.
func (r *run) planLoop() RunResult {
	ps := r.newPlanState()
	var err error
	if ps.rev, ps.plan, ps.outcomes, err = r.resumePlan(); err != nil {
		return r.failOrAbort(err)
	}
	if ps.plan == nil {
		ps.rev = 1
		p, err := r.makePlan(ps.planner, PlanInput{Goal: ps.goal, Tools: r.offered, Revision: 1})
		if err != nil {
			return r.failOrAbort(err)
		}
		ps.plan = &p
	}
	r.replans = ps.rev - 1
	for {
		if n := r.planRevision(ps); n.kind != nextRunAgain {
			return r.finish(n)
		}
	}
}

// planState is a plan-mode run's plan: who plans and judges, and how far it got.
type planState struct {
	cfg       PlanConfig
	planner   Planner
	evaluator Evaluator
	goal      string
	rev       int
	plan      *Plan
	outcomes  []StepOutcome
}

func (r *run) newPlanState() *planState {
	ps := &planState{cfg: r.cfg.Plan, planner: modelPlanner{r}, evaluator: modelEvaluator{r}, goal: r.goal()}
	ps.cfg.MaxSteps = defaultInt(ps.cfg.MaxSteps, 8)
	ps.cfg.MaxReplans = defaultInt(ps.cfg.MaxReplans, 2)
	ps.cfg.MaxParallel = defaultInt(ps.cfg.MaxParallel, 4)
	if ps.cfg.Planner != nil {
		ps.planner = ps.cfg.Planner
	}
	if ps.cfg.Evaluator != nil {
		ps.evaluator = ps.cfg.Evaluator
	}
	return ps
}

// planRevision executes what is left of the current plan, judges it, and decides: done,
// failed, or a new revision (nextRunAgain).
func (r *run) planRevision(ps *planState) next {
	ev, n := r.executePlan(ps)
	if n != nil {
		return *n
	}
	for _, s := range ps.plan.Steps { // what a verdict leaves undone is skipped
		if !hasOutcome(ps.outcomes, s.ID) && ev.Verdict != VerdictPlanContinue {
			r.journal.emit(EventPlanStep, &PlanStepData{ID: s.ID, Status: "skipped"})
			ps.outcomes = append(ps.outcomes, StepOutcome{ID: s.ID, Status: "skipped"})
		}
	}
	switch ev.Verdict {
	case VerdictPlanDone, VerdictPlanContinue:
		answer := cmpOr(ev.Answer, lastOutcome(ps.outcomes))
		r.appendMessage(Message{Role: RoleAssistant, Content: []Part{TextPart(answer)}})
		return next{kind: nextComplete, reason: ReasonEndTurn, text: answer}
	case VerdictPlanFail:
		return next{kind: nextFailWith, reason: ReasonPlanFailed, err: fmt.Errorf("the evaluator gave up: %s", ev.Reason)}
	}
	return r.replan(ps, ev)
}

// executePlan runs the plan's steps without an outcome in dependency order (plandag.go),
// judging a failed one at once, and the whole plan at the end. A non-nil next ends the
// run.
func (r *run) executePlan(ps *planState) (Evaluation, *next) {
	deps := planDeps(*ps.plan)
	for {
		ready, skip := readySteps(*ps.plan, deps, ps.outcomes)
		for _, s := range skip { // a dependency failed or was skipped
			o := StepOutcome{ID: s.ID, Status: "skipped", Outcome: "a step it depends on did not end ok"}
			r.recordStep(o)
			ps.outcomes = append(ps.outcomes, o)
		}
		if len(skip) > 0 {
			continue
		}
		if len(ready) == 0 {
			break
		}
		if err := r.ctxErr(); err != nil {
			return Evaluation{}, ptr(aborted(err))
		}
		if r.planSteps >= ps.cfg.MaxSteps {
			return Evaluation{}, ptr(summary(ReasonMaxSteps, planReport(ps.goal, ps.outcomes, "the run reached max_steps")))
		}
		ready = ready[:min(len(ready), ps.cfg.MaxSteps-r.planSteps)]
		if ev, n := r.runReady(ps, ready); n != nil || ev.Verdict != "" {
			return ev, n
		}
	}
	ev, err := r.evaluate(ps.evaluator, EvalInput{Goal: ps.goal, Revision: ps.rev, Plan: *ps.plan, Outcomes: ps.outcomes})
	if err != nil {
		return ev, ptr(failedOrAborted(err))
	}
	return ev, nil
}

// runReady executes the ready steps (the tool steps among them at once, when there are
// several; the others one at a time), records each outcome before the next step starts,
// and judges a failed one at once. A verdict other than continue, or a non-nil next,
// ends this revision.
func (r *run) runReady(ps *planState, ready []PlanStep) (Evaluation, *next) {
	outs, left := r.execWave(ps, ready)
	for {
		if err := r.ctxErr(); err != nil {
			// Cut short, not failed: no outcome is recorded, so a later run on the
			// session executes the step again.
			return Evaluation{}, ptr(aborted(err))
		}
		if r.stepErr != nil && len(outs) == 0 {
			// A step's call waits for a human (ErrApprovalPending) or could not be
			// stored: no outcome for it (the outcomes of the steps that ran beside it
			// are recorded first). A later run resumes the plan at this step, with the
			// answer in RunInput.Approvals under the call's id.
			return Evaluation{}, ptr(failedOrAborted(r.stepErr))
		}
		if len(outs) == 0 {
			if len(left) == 0 || r.planSteps >= ps.cfg.MaxSteps {
				return Evaluation{}, nil
			}
			o := r.execStep(ps.rev, left[0], ps.cfg.StepTimeout)
			left = left[1:]
			if r.stepErr == nil {
				outs = []StepOutcome{o}
			}
			continue // checked for a cut before it is recorded
		}
		o := outs[0]
		outs = outs[1:]
		if ev, n := r.judgeStep(ps, o); n != nil || ev.Verdict != "" {
			return ev, n
		}
	}
}

// judgeStep records a step's outcome and, when it failed, asks the evaluator at once:
// go on (a zero Evaluation), replan, give up or call it done.
func (r *run) judgeStep(ps *planState, o StepOutcome) (Evaluation, *next) {
	r.recordStep(o)
	ps.outcomes = append(ps.outcomes, o)
	if o.Status != "error" {
		return Evaluation{}, nil
	}
	ev, err := r.evaluate(ps.evaluator, EvalInput{Goal: ps.goal, Revision: ps.rev, Plan: *ps.plan, Outcomes: ps.outcomes})
	if err != nil {
		return ev, ptr(failedOrAborted(err))
	}
	if ev.Verdict == VerdictPlanContinue {
		return Evaluation{}, nil
	}
	return ev, nil
}

// replan asks for the next revision, within max_replans.
func (r *run) replan(ps *planState, ev Evaluation) next {
	if r.replans >= ps.cfg.MaxReplans {
		return summary(ReasonMaxReplans, planReport(ps.goal, ps.outcomes,
			fmt.Sprintf("the evaluator asked for a replan after %d (max_replans): %s", r.replans, ev.Reason)))
	}
	r.replans++
	ps.rev++
	prev := *ps.plan
	p, err := r.makePlan(ps.planner, PlanInput{Goal: ps.goal, Tools: r.offered, Revision: ps.rev, Previous: &prev, Outcomes: ps.outcomes, Feedback: ev.Reason})
	if err != nil {
		return failedOrAborted(err)
	}
	ps.plan, ps.outcomes = &p, nil
	return next{kind: nextRunAgain}
}

func ptr[T any](v T) *T { return &v }

// ReasonMaxSteps ends a plan-mode run that executed PlanConfig.MaxSteps steps.
const ReasonMaxSteps Reason = "max_steps"

// makePlan asks the planner, checks the plan, and stores it (plan event) at once, so a
// run killed later resumes it.
func (r *run) makePlan(p Planner, in PlanInput) (Plan, error) {
	plan, err := safePlan(r, p, in)
	if err == nil {
		err = checkPlan(plan)
	}
	if err != nil {
		if cerr := r.ctxErr(); cerr != nil {
			return Plan{}, cerr
		}
		return Plan{}, fmt.Errorf("planner (revision %d): %w", in.Revision, err)
	}
	if plan.Goal == "" {
		plan.Goal = in.Goal
	}
	r.journal.emit(EventPlan, &PlanData{Revision: in.Revision, Plan: plan})
	return plan, r.journal.store()
}

func safePlan(r *run, p Planner, in PlanInput) (out Plan, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panicked: %v", v)
		}
	}()
	return p.Plan(r.work, in)
}

// evaluate asks the evaluator and reports its verdict (evaluation event, stored).
func (r *run) evaluate(e Evaluator, in EvalInput) (ev Evaluation, err error) {
	func() {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panicked: %v", v)
			}
		}()
		ev, err = e.Evaluate(r.work, in)
	}()
	if err == nil {
		switch ev.Verdict {
		case VerdictPlanContinue, VerdictPlanDone, VerdictPlanReplan, VerdictPlanFail:
		default:
			err = fmt.Errorf("verdict %q is not continue, done, replan or fail", ev.Verdict)
		}
	}
	if err != nil {
		if cerr := r.ctxErr(); cerr != nil {
			return ev, cerr
		}
		return ev, fmt.Errorf("evaluator (revision %d): %w", in.Revision, err)
	}
	r.journal.emit(EventEvaluation, &EvaluationData{Verdict: ev.Verdict, Reason: ev.Reason})
	return ev, r.journal.store()
}

// execStep runs one step (plan_step running) and returns its outcome.
func (r *run) execStep(rev int, s PlanStep, defTimeout time.Duration) StepOutcome {
	r.journal.emit(EventPlanStep, &PlanStepData{ID: s.ID, Status: "running"})
	timeout := defTimeout
	if d, err := time.ParseDuration(s.Timeout); err == nil && d > 0 {
		timeout = d
	}
	start := r.cfg.Driver.Now()
	var text string
	ok := false
	r.planSteps++
	if s.Tool != "" {
		text, ok = r.stepTool(rev, s, timeout)
	} else {
		text, ok = r.stepRun(rev, s, timeout)
	}
	o := StepOutcome{ID: s.ID, Status: "ok", Outcome: text, DurationMS: r.cfg.Driver.Now().Sub(start).Milliseconds()}
	if !ok {
		o.Status = "error"
	}
	return o
}

// recordStep reports a step's outcome and stores it before the next step starts.
func (r *run) recordStep(o StepOutcome) {
	step := PlanStepData(o)
	r.journal.emit(EventPlanStep, &step)
	if err := r.journal.store(); err != nil {
		r.journal.emit(EventError, &ErrorData{Kind: "error", Message: err.Error()})
	}
}

// stepTool calls the step's tool through the tool pipeline (L22): the checks of any
// call, stored before it runs, guardrails on its result, within the step's timeout. A
// failed store write or an approval left pending ends the step with an error; the run
// then stops at its next check.
func (r *run) stepTool(rev int, s PlanStep, timeout time.Duration) (string, bool) {
	args := string(s.Arguments)
	if args == "" {
		args = "{}"
	}
	c := ToolCall{ID: fmt.Sprintf("plan%d_%s", rev, s.ID), Name: s.Tool, Arguments: args}
	res, err := r.callOne(c, timeout)
	if err != nil {
		r.stepErr = err
		return "Error: " + err.Error(), false
	}
	return res.Text(), !res.IsError
}

// stepRun does a step without a tool as a ReAct sub-run of this agent on a session of
// its own (SESSION:plan:REV:ID), bounded by the step's timeout. Its events reach this
// run's stream with the path AGENT/step:ID; an approval it waits for interrupts the plan,
// and the answering run resumes the sub-run.
func (r *run) stepRun(rev int, s PlanStep, timeout time.Duration) (string, bool) {
	prompt := fmt.Sprintf("Goal: %s\nYour step: %s\nExpected outcome: %s\nDo this step only, then answer with its outcome.",
		r.goal(), s.Description, s.ExpectedOutcome)
	in := RunInput{SessionID: fmt.Sprintf("%s:plan:%d:%s", r.in.SessionID, rev, s.ID),
		RunID: fmt.Sprintf("%s:step:%d:%s", r.in.RunID, rev, s.ID), TraceID: r.in.TraceID, User: r.in.User, forceReact: true}
	if len(r.in.Approvals) > 0 && r.a.awaitsApproval(r.ctx, in.SessionID) {
		in.Approvals = r.in.Approvals // resume the sub-run that waited, as ask_NAME does
	} else {
		in.Messages = []Message{UserMessage(prompt)}
	}
	in.Limits.MaxRunDuration = timeout
	res, err := r.a.RunWith(r.work, in, r.nestedEmit("step:"+s.ID))
	r.subRuns++
	if res.Status == StatusInterrupted && res.Reason == ReasonApprovalRequired {
		r.stepErr = ErrApprovalPending // the plan waits with it (planLoop)
		return "", false
	}
	if res.Final == nil {
		msg := fmt.Sprintf("Error: the step ended %s/%s", res.Status, res.Reason)
		if err != nil {
			msg += ": " + err.Error()
		}
		return msg, false
	}
	return res.Final.Text(), res.Status == StatusCompleted
}

// goal is the run's task: the last user message of the session.
func (r *run) goal() string {
	for i := len(r.transcript.history) - 1; i >= 0; i-- {
		if r.transcript.history[i].Role == RoleUser {
			return r.transcript.history[i].Text()
		}
	}
	return ""
}

// resumePlan finds a plan an earlier run of the session left unfinished (no
// evaluation ended it and that run was aborted or interrupted for an approval): its revision, the plan, and the
// outcomes already stored. A run with new input starts a new plan. The plan is in the
// session's events, which only this reads (a run starts from the session's head).
func (r *run) resumePlan() (int, *Plan, []StepOutcome, error) {
	if len(r.in.Messages) > 0 {
		return 0, nil, nil, nil
	}
	entries, err := r.cfg.Store.Load(r.ctx, r.in.SessionID)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("load session %q: %w", r.in.SessionID, err)
	}
	var ps planState
	for _, e := range entries {
		if e.Event != nil && e.RunID != r.in.RunID {
			ps.replay(e.Event.Data)
		}
	}
	if ps.plan == nil {
		return 0, nil, nil, nil
	}
	return ps.rev, ps.plan, ps.outcomes, nil
}

// replay applies one stored event to the plan being resumed: a plan starts a revision,
// a step's outcome counts, and a verdict or a run's end that closes the plan drops it.
func (ps *planState) replay(data any) {
	switch d := data.(type) {
	case *PlanData:
		p := d.Plan
		ps.plan, ps.rev, ps.outcomes = &p, d.Revision, nil
	case *PlanStepData:
		if ps.plan != nil && (d.Status == "ok" || d.Status == "error") {
			ps.outcomes = append(ps.outcomes, StepOutcome(*d))
		}
	case *EvaluationData:
		if d.Verdict != VerdictPlanContinue && d.Verdict != VerdictPlanReplan {
			ps.plan = nil
		}
	case *RunFinishedData:
		if d.Status != StatusAborted && d.Status != StatusInterrupted {
			ps.plan = nil
		}
	}
}

func hasOutcome(os []StepOutcome, id string) bool {
	for _, o := range os {
		if o.ID == id {
			return true
		}
	}
	return false
}

func lastOutcome(os []StepOutcome) string {
	for i := len(os) - 1; i >= 0; i-- {
		if os[i].Status == "ok" {
			return os[i].Outcome
		}
	}
	return ""
}

// planReport is the final text of a plan that could not finish: why, and each step.
func planReport(goal string, os []StepOutcome, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The plan for %q did not finish: %s.", goal, why)
	for _, o := range os {
		fmt.Fprintf(&b, "\n- step %s: %s", o.ID, o.Status)
		if o.Outcome != "" {
			fmt.Fprintf(&b, " (%s)", shorten(o.Outcome, 200))
		}
	}
	return b.String()
}
