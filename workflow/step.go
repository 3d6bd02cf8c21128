package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// exec runs a step: once, or once per item with at most max_parallel at a time across
// the run; items that ended in an earlier attempt of the run are not run again.
func (s *sched) exec(ctx context.Context, cs *cstep, vars map[string]any, items []any) (any, error) {
	if cs.forEach == nil {
		return s.attempts(ctx, cs, vars, -1)
	}
	outs := make([]any, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		s.mu.Lock()
		ir := s.rec.Steps[cs.ID].Items[i]
		s.mu.Unlock()
		if ir != nil && ir.Status == StatusOK {
			outs[i] = ir.Output
			continue
		}
		iv := map[string]any{"inputs": vars["inputs"], "steps": vars["steps"], "item": item, "index": int64(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.attempts(ctx, cs, iv, i)
			ir := &ItemRecord{Status: StatusOK, Output: out}
			if err != nil {
				ir = &ItemRecord{Status: StatusFailed, Error: err.Error()}
			}
			outs[i], errs[i] = out, err
			if err != nil && (ctx.Err() != nil || storeOutage(err)) {
				return // cut short: no record, the item runs again on resume
			}
			s.mu.Lock()
			var serr error
			if stored := s.rec.Steps[cs.ID].Items[i]; err != nil || stored == nil || stored.Status != StatusOK { // else stored with its call's end (fold.go)
				s.rec.Steps[cs.ID].Items[i] = ir
				serr = s.save(ctx)
			}
			s.mu.Unlock()
			if serr != nil && errs[i] == nil {
				errs[i] = serr
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return outs, nil
}

// attempts runs one unit (the step, or its item-th item; -1 for the step) with the
// step's retries; each attempt holds a slot of max_parallel.
func (s *sched) attempts(ctx context.Context, cs *cstep, vars map[string]any, item int) (any, error) {
	delay := s.e.RetryDelay
	if delay <= 0 {
		delay = 500 * time.Millisecond
	}
	var last error
	for attempt := 0; attempt <= cs.Retry; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			delay = min(2*delay, 30*time.Second)
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		s.rec.Steps[cs.ID].Attempts++
		s.mu.Unlock()
		out, err := s.onceFree(ctx, cs, vars, item)
		<-s.sem
		if err == nil {
			return out, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, last
}

// once makes one attempt: one tool call or one prompt run, under the step's timeout.
func (s *sched) once(ctx context.Context, cs *cstep, vars map[string]any, item int) (any, error) {
	if cs.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cs.timeout)
		defer cancel()
	}
	if cs.Workflow != "" {
		sub := s.rec.RunID + "." + cs.ID
		if item >= 0 {
			sub += fmt.Sprintf(".%d", item)
		}
		return s.subRun(ctx, cs, vars, sub)
	}
	session := StepSession(s.w.Name, s.rec.Owner, s.rec.RunID, cs.ID, item)
	if cs.Tool != "" {
		b := cs.argsB
		if b == nil {
			var err error
			if b, err = argsJSON(cs.args, vars); err != nil {
				return nil, fmt.Errorf("arguments: %w", err)
			}
		}
		res, run := s.e.Exec.ToolStep(loop.WithRunWrites(ctx, session, s.stepWriter(cs, item)), cs.Tool, b, session, cs.timeout)
		if run.Status != loop.StatusCompleted || res.IsError {
			return nil, &callError{text: res.Text(), err: run.Err}
		}
		if item < 0 {
			s.mu.Lock()
			end := s.over[cs.ID] // the output its end was stored with (fold.go), decoded once
			s.mu.Unlock()
			if end != nil {
				return end.Output, nil
			}
		}
		return resultValue(res.Structured, res.Text()), nil
	}
	p, err := cs.prompt.eval(vars)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	prompt, ok := p.(string)
	if !ok {
		b, _ := json.Marshal(p)
		prompt = string(b)
	}
	if len(cs.Agents) > 0 {
		return s.askAll(ctx, cs, prompt, session)
	}
	res, err := s.e.Exec.RunPrompt(ctx, cs.Agent, prompt, session)
	if err != nil {
		return nil, err
	}
	if res.Status != loop.StatusCompleted {
		msg := fmt.Sprintf("the agent run ended %s/%s", res.Status, res.Reason)
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		return nil, errors.New(msg)
	}
	text := ""
	if res.Final != nil {
		text = res.Final.Text()
	}
	return resultValue(res.Output, text), nil
}

// subRun runs a workflow step: the sub-workflow's run, whose id is the step's session
// ("RUNID.STEP", "RUNID.STEP.ITEM"), with the evaluated arguments as its inputs. It is
// stored like any run, so a resumed or retried step resumes it: its finished steps are
// not run again. The step's output is the sub-run's outputs.
func (s *sched) subRun(ctx context.Context, cs *cstep, vars map[string]any, runID string) (any, error) {
	sub := s.w.subs[cs.Workflow]
	if sub == nil {
		return nil, fmt.Errorf("workflow %q is not linked (workflow.Link)", cs.Workflow)
	}
	args, err := evalValue(cs.args, vars)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	res, err := s.e.Run(ctx, sub, RunInput{RunID: runID, Owner: s.rec.Owner, Inputs: b}, nil)
	if err != nil {
		return nil, err
	}
	if res.Record.Status != RunCompleted {
		return nil, fmt.Errorf("workflow %s run %s ended %s: %s", sub.Name, runID, res.Record.Status, res.Record.Error)
	}
	outs := map[string]any{}
	for k, v := range res.Record.Outputs {
		outs[k] = v
	}
	return outs, nil
}

// resultValue is a step's output: the structured result when there is one, else the
// text, parsed when it is a JSON document (a tool that prints a list gives a list).
func resultValue(structured json.RawMessage, text string) any {
	var v any
	if len(structured) > 0 && json.Unmarshal(structured, &v) == nil {
		return v
	}
	if json.Valid([]byte(text)) && json.Unmarshal([]byte(text), &v) == nil {
		return v
	}
	return text
}

// argsJSON is a tool step's arguments evaluated in vars and encoded as its call sends
// them (none is {}).
func argsJSON(args any, vars map[string]any) ([]byte, error) {
	v, err := evalValue(args, vars)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	return json.Marshal(v)
}
