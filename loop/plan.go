package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Plan mode (Config.Mode "plan", seed 004): instead of one ReAct loop, a run plans,
// executes the plan step by step, records each step's outcome, evaluates, and replans.
// planrun.go runs it; this file holds the contract.

// A Plan is what a Planner produces: a goal and its steps.
type Plan struct {
	Goal  string     `json:"goal"`
	Steps []PlanStep `json:"steps"`
	// Parameters are values the planner fixes once for the plan; steps use them as
	// ${params.NAME} (plandag.go).
	Parameters map[string]any `json:"parameters,omitempty"`
}

// PlanStep is one step. A step that names a Tool is executed by calling it with
// Arguments; any other is a ReAct sub-run bounded to the step. Timeout ("30s") bounds it.
type PlanStep struct {
	ID              string          `json:"id"`
	Description     string          `json:"description"`
	Tool            string          `json:"tool,omitempty"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ExpectedOutcome string          `json:"expected_outcome"`
	Timeout         string          `json:"timeout,omitempty"`
	// DependsOn names the steps that must end ok first (plandag.go).
	DependsOn []string `json:"depends_on,omitempty"`
}

// StepOutcome is what the monitor recorded of a step.
type StepOutcome struct {
	ID         string `json:"id"`
	Status     string `json:"status"` // ok | error | skipped
	Outcome    string `json:"outcome,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// PlanInput is what a Planner gets: the goal, the tools a step may name, and for a
// replan the plan before, its outcomes and the evaluator's feedback.
type PlanInput struct {
	Goal     string        `json:"goal"`
	Tools    []ToolSpec    `json:"tools"`
	Revision int           `json:"revision"`
	Previous *Plan         `json:"previous,omitempty"`
	Outcomes []StepOutcome `json:"outcomes,omitempty"`
	Feedback string        `json:"feedback,omitempty"`
}

// EvalInput is what an Evaluator gets: the goal, the plan and every outcome so far.
type EvalInput struct {
	Goal     string        `json:"goal"`
	Revision int           `json:"revision"`
	Plan     Plan          `json:"plan"`
	Outcomes []StepOutcome `json:"outcomes"`
}

// Verdicts of an Evaluation.
const (
	VerdictPlanContinue = "continue" // go on with the plan (with steps left), else as done
	VerdictPlanDone     = "done"     // the goal is reached: Answer (or the last outcome) is the final
	VerdictPlanReplan   = "replan"   // plan again, with Reason as feedback
	VerdictPlanFail     = "fail"     // give up: the run fails with Reason
)

// Evaluation is an Evaluator's decision.
type Evaluation struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Answer  string `json:"answer,omitempty"`
}

// A Planner makes plans; an Evaluator judges their outcomes. Nil in PlanConfig means
// the agent's model with a built-in prompt.
type (
	Planner interface {
		Plan(ctx context.Context, in PlanInput) (Plan, error)
	}
	Evaluator interface {
		Evaluate(ctx context.Context, in EvalInput) (Evaluation, error)
	}
)

// PlanConfig is Config.Plan. Zero fields take the defaults.
type PlanConfig struct {
	MaxSteps    int           // steps executed over all revisions; default 8
	MaxReplans  int           // default 2; past it the run ends incomplete/max_replans
	StepTimeout time.Duration // for steps without their own timeout; default none
	MaxParallel int           // tool steps of a plan with dependencies run at once; default 4
	Planner     Planner
	Evaluator   Evaluator
}

// Plan-mode events' data.
type (
	PlanData struct {
		Revision int  `json:"revision"`
		Plan     Plan `json:"plan"`
	}
	PlanStepData struct {
		ID         string `json:"id"`
		Status     string `json:"status"` // running | ok | error | skipped
		Outcome    string `json:"outcome,omitempty"`
		DurationMS int64  `json:"duration_ms"`
	}
	EvaluationData struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
)

const (
	EventPlan       EventType = "plan"
	EventPlanStep   EventType = "plan_step"
	EventEvaluation EventType = "evaluation"

	ReasonMaxReplans Reason = "max_replans" // the evaluator asked for more replans than allowed
	ReasonPlanFailed Reason = "plan_failed" // the evaluator gave up
)

// checkPlan refuses a plan the executor cannot run.
func checkPlan(p Plan) error {
	if len(p.Steps) == 0 {
		return errors.New("the plan has no steps")
	}
	seen := map[string]bool{}
	for i, s := range p.Steps {
		if s.ID == "" {
			return fmt.Errorf("step %d has no id", i+1)
		}
		if seen[s.ID] {
			return fmt.Errorf("two steps have the id %q", s.ID)
		}
		seen[s.ID] = true
		if s.Tool == "" && strings.TrimSpace(s.Description) == "" {
			return fmt.Errorf("step %q has neither a tool nor a description", s.ID)
		}
		if len(s.Arguments) > 0 && !json.Valid(s.Arguments) {
			return fmt.Errorf("step %q: arguments are not JSON", s.ID)
		}
		if s.Timeout != "" {
			if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("step %q: timeout %q is not a duration", s.ID, s.Timeout)
			}
		}
	}
	return checkPlanDAG(p)
}

// The model as planner and evaluator: one call each, tools off, the answer a JSON
// document matching a schema (sent as the response format), retried on bad JSON.
const (
	plannerPrompt   = `You plan. Break the goal into a few concrete steps. A step may name one of the tools with its arguments; otherwise describe the work and an assistant will do it with the tools. Give each step an id, a description and its expected outcome. Steps that need others first list them in depends_on (steps that do not wait for each other may run at the same time); a step may use an earlier step's outcome as ${steps.ID.outcome} and a plan parameter as ${params.NAME} in its arguments or description. Reply with only a JSON document: {"goal": "...", "parameters": {}, "steps": [{"id": "1", "description": "...", "tool": "NAME (optional)", "arguments": {}, "expected_outcome": "...", "timeout": "30s (optional)", "depends_on": ["ids (optional)"]}]}.`
	evaluatorPrompt = `You evaluate a plan's progress against its goal and each step's expected outcome. Reply with only a JSON document: {"verdict": "continue|done|replan|fail", "reason": "...", "answer": "the final answer, when done"}.`
)

var (
	planSchema = json.RawMessage(`{"type":"object","required":["goal","steps"],"properties":{"goal":{"type":"string"},"parameters":{"type":"object"},"steps":{"type":"array","items":{"type":"object","required":["id","description","expected_outcome"],"properties":{"id":{"type":"string"},"description":{"type":"string"},"tool":{"type":"string"},"arguments":{"type":"object"},"expected_outcome":{"type":"string"},"timeout":{"type":"string"},"depends_on":{"type":"array","items":{"type":"string"}}}}}}}`)
	evalSchema = json.RawMessage(`{"type":"object","required":["verdict","reason"],"properties":{"verdict":{"enum":["continue","done","replan","fail"]},"reason":{"type":"string"},"answer":{"type":"string"}}}`)
)

// modelPlanner and modelEvaluator are the defaults: the run's own model.
type modelPlanner struct{ r *run }
type modelEvaluator struct{ r *run }

func (p modelPlanner) Plan(_ context.Context, in PlanInput) (Plan, error) {
	b, _ := json.MarshalIndent(in, "", " ")
	var out Plan
	err := p.r.askJSON(plannerPrompt, "Plan this:\n"+string(b), planSchema, &out)
	return out, err
}

func (e modelEvaluator) Evaluate(_ context.Context, in EvalInput) (Evaluation, error) {
	b, _ := json.MarshalIndent(in, "", " ")
	var out Evaluation
	err := e.r.askJSON(evaluatorPrompt, "Evaluate this:\n"+string(b), evalSchema, &out)
	return out, err
}

// askJSON makes one quiet model call (no deltas: the JSON is not the conversation) and
// decodes its answer into out, retrying up to MaxDecodeRetries times on bad JSON.
func (r *run) askJSON(prompt, question string, schema json.RawMessage, out any) error {
	compiled, err := compileSchema("plan", schema)
	if err != nil {
		return err
	}
	msgs := []Message{{Role: RoleSystem, Content: []Part{TextPart(prompt)}}, UserMessage(question)}
	for attempt := 0; ; attempt++ {
		req := Request{Model: r.cfg.ModelName, Messages: msgs, ResponseFormat: schema,
			Metadata: RequestMetadata{SessionID: r.in.SessionID, RunID: r.in.RunID, Extra: r.in.Metadata}}
		r.quiet = true
		resp, err := r.retrying(r.work, req)
		r.quiet = false
		if err != nil {
			return err
		}
		r.journal.emit(EventUsage, r.journal.pl.usage.put(resp.usage))
		text := resp.message.Text()
		verr := compiled.validate(text)
		if verr == nil {
			return json.Unmarshal([]byte(text), out)
		}
		r.journal.emit(EventError, &ErrorData{Kind: "output_decoding", Message: verr.Error(), Retryable: attempt < r.cfg.MaxDecodeRetries})
		if attempt >= r.cfg.MaxDecodeRetries {
			return fmt.Errorf("the model's answer is not a valid document after %d attempts: %w", attempt+1, verr)
		}
		msgs = append(msgs, resp.message, UserMessage(fmt.Sprintf("That is not valid: %v. Reply with only the JSON document.", verr)))
	}
}
