package sdk

import (
	"encoding/json"
	"fmt"
)

// The registered hook handlers; each kind's export package calls the
// matching Handle function. Register them from init().
var (
	contextBuildHandler func(ContextInput) (ContextOutput, error)
	stepHandler         func(StepInput) (Decision, error)
	beforeFinalHandler  func(FinalInput) (Decision, error)
	guardHandler        func(GuardInput) (GuardResult, error)
	permitHandler       func(PermitInput) (PermitResult, error)
	planHandler         func(PlanInput) (Plan, error)
	evaluateHandler     func(EvalInput) (Evaluation, error)
	gradeHandler        func(GradeInput) (Grade, error)
)

// OnGrade registers the grader (kind "evaluator", export grade): how `agenthost eval`
// grades a case's run with this plugin.
func OnGrade(fn func(GradeInput) (Grade, error)) { gradeHandler = fn; warmIO[GradeInput, Grade]() }

// HandleGrade answers grade.
func HandleGrade(input []byte) ([]byte, error) {
	if gradeHandler == nil {
		return nil, fmt.Errorf("grade: no handler (call sdk.OnGrade in init)")
	}
	return handleJSON("grade", input, gradeHandler)
}

// OnPlan registers the planner (kind "planner", export plan).
func OnPlan(fn func(PlanInput) (Plan, error)) { planHandler = fn; warmIO[PlanInput, Plan]() }

// OnEvaluate registers the evaluator (kind "evaluator", export evaluate).
func OnEvaluate(fn func(EvalInput) (Evaluation, error)) {
	evaluateHandler = fn
	warmIO[EvalInput, Evaluation]()
}

// HandlePlan answers plan.
func HandlePlan(input []byte) ([]byte, error) {
	if planHandler == nil {
		return nil, fmt.Errorf("plan: no handler (call sdk.OnPlan in init)")
	}
	return handleJSON("plan", input, planHandler)
}

// HandleEvaluate answers evaluate.
func HandleEvaluate(input []byte) ([]byte, error) {
	if evaluateHandler == nil {
		return nil, fmt.Errorf("evaluate: no handler (call sdk.OnEvaluate in init)")
	}
	return handleJSON("evaluate", input, evaluateHandler)
}

// OnContextBuild registers the context strategy (kind "context", export context_build).
func OnContextBuild(fn func(ContextInput) (ContextOutput, error)) {
	contextBuildHandler = fn
	warmIO[ContextInput, ContextOutput]()
}

// OnStep registers the termination hook's on_step; without one, on_step proceeds.
func OnStep(fn func(StepInput) (Decision, error)) { stepHandler = fn; warmIO[StepInput, Decision]() }

// OnBeforeFinal registers the termination hook's before_final; without one,
// before_final proceeds.
func OnBeforeFinal(fn func(FinalInput) (Decision, error)) {
	beforeFinalHandler = fn
	warmIO[FinalInput, Decision]()
}

// OnGuard registers the guardrail (kind "guardrail", export guard).
func OnGuard(fn func(GuardInput) (GuardResult, error)) {
	guardHandler = fn
	warmIO[GuardInput, GuardResult]()
}

// OnPermit registers the permission hook (kind "permission", export permit).
func OnPermit(fn func(PermitInput) (PermitResult, error)) {
	permitHandler = fn
	warmIO[PermitInput, PermitResult]()
}

// HandleContextBuild answers context_build. An error fails the call (the
// host reports it as a fault of the plugin).
func HandleContextBuild(input []byte) ([]byte, error) {
	if contextBuildHandler == nil {
		return nil, fmt.Errorf("context_build: no handler (call sdk.OnContextBuild in init)")
	}
	return handleJSON("context_build", input, contextBuildHandler)
}

// HandleOnStep answers on_step.
func HandleOnStep(input []byte) ([]byte, error) {
	if stepHandler == nil {
		return json.Marshal(Decision{})
	}
	return handleJSON("on_step", input, stepHandler)
}

// HandleBeforeFinal answers before_final.
func HandleBeforeFinal(input []byte) ([]byte, error) {
	if beforeFinalHandler == nil {
		return json.Marshal(Decision{})
	}
	return handleJSON("before_final", input, beforeFinalHandler)
}

// HandleGuard answers guard.
func HandleGuard(input []byte) ([]byte, error) {
	if guardHandler == nil {
		return nil, fmt.Errorf("guard: no handler (call sdk.OnGuard in init)")
	}
	return handleJSON("guard", input, guardHandler)
}

// HandlePermit answers permit. Without a handler it fails, which the host treats as
// a denial: a permission plugin fails closed.
func HandlePermit(input []byte) ([]byte, error) {
	if permitHandler == nil {
		return nil, fmt.Errorf("permit: no handler (call sdk.OnPermit in init)")
	}
	return handleJSON("permit", input, permitHandler)
}

func handleJSON[In, Out any](export string, input []byte, fn func(In) (Out, error)) ([]byte, error) {
	var in In
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("%s: bad input: %w", export, err)
	}
	out, err := fn(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", export, err)
	}
	return json.Marshal(out)
}

var (
	extractHandler func(ExtractInput) (ExtractOutput, error)
	rankHandler    func(RankInput) (RankOutput, error)
)

// OnExtract registers the extractor (kind "memory", export extract): after a run of a
// named user, what of the run to remember.
func OnExtract(fn func(ExtractInput) (ExtractOutput, error)) {
	extractHandler = fn
	warmIO[ExtractInput, ExtractOutput]()
}

// OnRank registers the ranker (kind "memory", export rank): before a model call, which
// of the memories a search found to give the model, best first.
func OnRank(fn func(RankInput) (RankOutput, error)) {
	rankHandler = fn
	warmIO[RankInput, RankOutput]()
}

// HandleExtract answers extract.
func HandleExtract(input []byte) ([]byte, error) {
	if extractHandler == nil {
		return nil, fmt.Errorf("extract: no handler (call sdk.OnExtract in init)")
	}
	return handleJSON("extract", input, extractHandler)
}

// HandleRank answers rank.
func HandleRank(input []byte) ([]byte, error) {
	if rankHandler == nil {
		return nil, fmt.Errorf("rank: no handler (call sdk.OnRank in init)")
	}
	return handleJSON("rank", input, rankHandler)
}
