package loop

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Plans as DAGs. A step may name the steps it waits for (depends_on); its arguments and
// description may use the plan's parameters (${params.NAME}) and earlier steps' outcomes
// (${steps.ID.outcome}), and such a reference is a dependency too. A plan in which no
// step has a dependency runs in list order, one step after the other, as plans always
// did; a plan with dependencies runs each step once everything it waits for ended ok,
// the tool steps that are ready together in parallel (PlanConfig.MaxParallel), and skips
// a step whose dependency failed or was skipped. The scheduling rules are the workflow
// engine's (docs/workflows.md), but plan mode keeps its own executor: a plan step is a
// call of this run's tool pipeline or a sub-run on this run's ledger, which the loop,
// importing nothing of the host, cannot hand to the host's engine.

var planRefRE = regexp.MustCompile(`\$\{\s*(params|steps)\.([A-Za-z0-9_-]+)(\.outcome)?\s*\}`)

// planDeps are each step's dependencies: declared and referenced, or, in a plan with
// none at all, the step before it.
func planDeps(p Plan) map[string][]string {
	deps := map[string][]string{}
	some := false
	for _, s := range p.Steps {
		d := slices.Clone(s.DependsOn)
		for _, m := range planRefRE.FindAllStringSubmatch(string(s.Arguments)+" "+s.Description, -1) {
			if m[1] == "steps" && !slices.Contains(d, m[2]) {
				d = append(d, m[2])
			}
		}
		deps[s.ID] = d
		some = some || len(d) > 0
	}
	if !some {
		for i := 1; i < len(p.Steps); i++ {
			deps[p.Steps[i].ID] = []string{p.Steps[i-1].ID}
		}
	}
	return deps
}

// checkPlanDAG refuses dependencies on unknown steps, references to unknown parameters
// and cycles.
func checkPlanDAG(p Plan) error {
	ids := map[string]bool{}
	for _, s := range p.Steps {
		ids[s.ID] = true
	}
	for _, s := range p.Steps {
		if err := checkStepRefs(p, s, ids); err != nil {
			return err
		}
	}
	deps := planDeps(p)
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string, path []string) error
	visit = func(id string, path []string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("the steps depend on each other in a cycle: %s → %s", strings.Join(path, " → "), id)
		case 2:
			return nil
		}
		state[id] = 1
		for _, d := range deps[id] {
			if err := visit(d, append(path, id)); err != nil {
				return err
			}
		}
		state[id] = 2
		return nil
	}
	for _, s := range p.Steps {
		if err := visit(s.ID, nil); err != nil {
			return err
		}
	}
	return nil
}

func checkStepRefs(p Plan, s PlanStep, ids map[string]bool) error {
	for _, d := range s.DependsOn {
		if !ids[d] {
			return fmt.Errorf("step %q depends on an unknown step %q", s.ID, d)
		}
	}
	for _, m := range planRefRE.FindAllStringSubmatch(string(s.Arguments)+" "+s.Description, -1) {
		if _, ok := p.Parameters[m[2]]; m[1] == "params" && !ok {
			return fmt.Errorf("step %q refers to an unknown parameter %q", s.ID, m[2])
		}
		if m[1] == "steps" && !ids[m[2]] {
			return fmt.Errorf("step %q refers to an unknown step %q", s.ID, m[2])
		}
	}
	return nil
}

// readySteps are the steps without an outcome whose dependencies all ended: run the
// ones whose dependencies are ok, skip the others.
func readySteps(p Plan, deps map[string][]string, outcomes []StepOutcome) (run, skip []PlanStep) {
	status := map[string]string{}
	for _, o := range outcomes {
		status[o.ID] = o.Status
	}
	for _, s := range p.Steps {
		if status[s.ID] != "" {
			continue
		}
		ready, ok := true, true
		for _, d := range deps[s.ID] {
			switch status[d] {
			case "":
				ready = false
			case "ok":
			default:
				ok = false
			}
		}
		switch {
		case ready && ok:
			run = append(run, s)
		case ready:
			skip = append(skip, s)
		}
	}
	return run, skip
}

// bindStep fills a step's ${params.NAME} and ${steps.ID.outcome} references. A string
// argument that is one reference and nothing else takes the value with its type (an
// outcome that is a JSON document is that document); elsewhere the text is written in.
func bindStep(p Plan, s PlanStep, outcomes []StepOutcome) (PlanStep, error) {
	if !planRefRE.MatchString(string(s.Arguments) + s.Description) {
		return s, nil
	}
	values := map[string]any{}
	for k, v := range p.Parameters {
		values["params."+k] = v
	}
	for _, o := range outcomes {
		var v any
		if json.Unmarshal([]byte(o.Outcome), &v) != nil {
			v = o.Outcome
		}
		values["steps."+o.ID] = v
	}
	lookup := func(m []string) (any, error) {
		v, ok := values[m[1]+"."+m[2]]
		if !ok {
			return nil, fmt.Errorf("step %q: ${%s.%s} has no value yet", s.ID, m[1], m[2])
		}
		return v, nil
	}
	var err error
	s.Description = fill(s.Description, lookup, &err)
	if len(s.Arguments) > 0 {
		var args any
		if jerr := json.Unmarshal(s.Arguments, &args); jerr != nil {
			return s, fmt.Errorf("step %q: arguments: %w", s.ID, jerr)
		}
		args = bindValue(args, lookup, &err)
		s.Arguments, _ = json.Marshal(args)
	}
	return s, err
}

func bindValue(v any, lookup func([]string) (any, error), errp *error) any {
	switch x := v.(type) {
	case string:
		if m := planRefRE.FindStringSubmatch(x); m != nil && m[0] == strings.TrimSpace(x) {
			val, err := lookup(m)
			if err != nil && *errp == nil {
				*errp = err
			}
			return val
		}
		return fill(x, lookup, errp)
	case map[string]any:
		for k, e := range x {
			x[k] = bindValue(e, lookup, errp)
		}
	case []any:
		for i, e := range x {
			x[i] = bindValue(e, lookup, errp)
		}
	}
	return v
}

func fill(text string, lookup func([]string) (any, error), errp *error) string {
	return planRefRE.ReplaceAllStringFunc(text, func(ref string) string {
		val, err := lookup(planRefRE.FindStringSubmatch(ref))
		if err != nil {
			if *errp == nil {
				*errp = err
			}
			return ref
		}
		if s, ok := val.(string); ok {
			return s
		}
		b, _ := json.Marshal(val)
		return string(b)
	})
}

// execWave starts on the ready steps: it binds their references (a step whose
// references cannot be bound fails) and, in a plan with dependencies, calls the tool
// steps among them together (up to MaxParallel). It returns the outcomes it has, in
// order, and the steps left to run one at a time. A together step whose call waits for
// an approval or could not be stored has no outcome (r.stepErr says which).
func (r *run) execWave(ps *planState, steps []PlanStep) (outs []StepOutcome, left []PlanStep) {
	bound := make([]PlanStep, 0, len(steps))
	var together []int
	for _, s := range steps {
		b, err := bindStep(*ps.plan, s, ps.outcomes)
		if err != nil {
			r.journal.emit(EventPlanStep, &PlanStepData{ID: s.ID, Status: "running"})
			r.planSteps++
			outs = append(outs, StepOutcome{ID: s.ID, Status: "error", Outcome: "Error: " + err.Error()})
			continue
		}
		if b.Tool != "" && ps.cfg.MaxParallel > 1 {
			together = append(together, len(bound))
		}
		bound = append(bound, b)
	}
	if len(together) < 2 {
		return outs, bound
	}
	outs = append(outs, r.execTogether(ps, bound, together)...)
	for i, s := range bound {
		if !slices.Contains(together, i) {
			left = append(left, s)
		}
	}
	return outs, left
}

// execTogether calls the tool steps at idx at once, each through the tool pipeline.
func (r *run) execTogether(ps *planState, steps []PlanStep, idx []int) (outs []StepOutcome) {
	calls := make([]ToolCall, len(idx))
	timeouts := make([]time.Duration, len(idx))
	for k, i := range idx {
		s := steps[i]
		r.journal.emit(EventPlanStep, &PlanStepData{ID: s.ID, Status: "running"})
		r.planSteps++
		args := string(s.Arguments)
		if args == "" {
			args = "{}"
		}
		calls[k] = ToolCall{ID: fmt.Sprintf("plan%d_%s", ps.rev, s.ID), Name: s.Tool, Arguments: args}
		timeouts[k] = ps.cfg.StepTimeout
		if d, err := time.ParseDuration(s.Timeout); err == nil && d > 0 {
			timeouts[k] = d
		}
	}
	start := r.cfg.Driver.Now()
	results, ends, errs, err := r.callWave(calls, timeouts, ps.cfg.MaxParallel)
	if err != nil {
		r.stepErr = err
		return nil
	}
	for k, i := range idx {
		if errs[k] != nil {
			r.stepErr = errs[k]
			continue
		}
		o := StepOutcome{ID: steps[i].ID, Status: "ok", Outcome: results[k].Text(), DurationMS: ends[k].Sub(start).Milliseconds()}
		if results[k].IsError {
			o.Status = "error"
		}
		outs = append(outs, o)
	}
	return outs
}
