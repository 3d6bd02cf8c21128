package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

func ended(status string) bool { return status == StatusDone || status == StatusFailed || status == StatusSkipped }

// runSteps starts every step whose dependencies have ended, until none is left to start
// and none runs. After a failure no step starts; those running end.
func (r *runner) runSteps(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ends := make(chan error)
	started := make([]bool, len(r.w.steps))
	running := 0
	var firstErr error
	for {
		progress, err := r.startReady(ctx, started, &running, ends)
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		if progress {
			continue
		}
		if running == 0 {
			break
		}
		if err := <-ends; err != nil && firstErr == nil {
			firstErr = err // the store failed: stop starting steps, let the running ones end
			cancel()
		}
		running--
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = context.Cause(ctx) // the caller's: the run stops here and resumes later
	}
	return firstErr
}

// startReady starts (or settles: resumed, skipped) the steps that are ready; progress
// says whether anything changed that may make another step ready.
func (r *runner) startReady(ctx context.Context, started []bool, running *int, ends chan<- error) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	progress := false
	for _, i := range r.w.order {
		s := r.w.steps[i]
		if started[i] || len(r.fails) > 0 || ctx.Err() != nil {
			continue
		}
		if rec, ok := r.st.Steps[s.ID]; ok && ended(rec.Status) {
			started[i], progress = true, true
			if rec.Status == StatusFailed {
				r.fails = append(r.fails, fmt.Sprintf("step %s: %s", s.ID, rec.Error))
			}
			r.emit(Event{Type: "step_finished", Run: r.id, Step: s.ID, Status: rec.Status, Output: rec.Output, Error: rec.Error, Resumed: true})
			continue
		}
		ready, skip := r.readiness(s)
		if !ready {
			continue
		}
		started[i], progress = true, true
		if !skip && s.ifProg != nil {
			ok, err := evalBool(s.ifProg, r.vars())
			if err != nil {
				if err := r.endLocked(ctx, s.ID, nil, Record{Status: StatusFailed, Error: "if: " + err.Error()}); err != nil {
					return progress, err
				}
				continue
			}
			skip = !ok
		}
		if skip {
			if err := r.endLocked(ctx, s.ID, nil, Record{Status: StatusSkipped}); err != nil {
				return progress, err
			}
			continue
		}
		*running++
		go func() { ends <- r.runStep(ctx, s) }()
	}
	return progress, nil
}

// readiness: every dependency has ended; skip when one was skipped (a branch a
// condition left out is left out whole).
func (r *runner) readiness(s compiled) (ready, skip bool) {
	for _, d := range s.DependsOn {
		rec, ok := r.st.Steps[d]
		if !ok || !ended(rec.Status) {
			return false, false
		}
		skip = skip || rec.Status != StatusDone
	}
	return true, skip
}

// endLocked records how a step (or item, key ID#i) ended, stores it and reports it;
// r.mu is held.
func (r *runner) endLocked(ctx context.Context, key string, item *int, rec Record) error {
	prev := r.st.Steps[key]
	rec.Attempts, rec.Started, rec.Ended = prev.Attempts, prev.Started, time.Now().UTC()
	r.st.Steps[key] = rec
	step := key
	if item != nil {
		step = key[:len(key)-len(strconv.Itoa(*item))-1]
	} else if rec.Status == StatusFailed {
		r.fails = append(r.fails, fmt.Sprintf("step %s: %s", key, rec.Error))
	}
	err := r.save(ctx)
	r.emit(Event{Type: "step_finished", Run: r.id, Step: step, Item: item, Status: rec.Status, Output: rec.Output, Error: rec.Error})
	return err
}

// begin records that a step (or item) starts, before it does (so a resumed run knows
// it may have had effects), and reports it.
func (r *runner) begin(ctx context.Context, key, step string, item *int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.st.Steps[key]
	rec.Status, rec.Attempts, rec.Started = StatusRunning, rec.Attempts+1, time.Now().UTC()
	r.st.Steps[key] = rec
	err := r.save(ctx)
	r.emit(Event{Type: "step_started", Run: r.id, Step: step, Item: item})
	return err
}

// runStep runs a step: once, or for each item of its for_each list (items in parallel,
// each stored on its own, so a resumed run does only the items that had not ended).
func (r *runner) runStep(ctx context.Context, s compiled) error {
	if err := r.begin(ctx, s.ID, s.ID, nil); err != nil {
		return err
	}
	if s.forEach == nil {
		r.mu.Lock()
		vars := r.vars()
		r.mu.Unlock()
		out, err := r.exec(ctx, s, s.ID, vars)
		return r.finish(ctx, s.ID, nil, out, err)
	}
	r.mu.Lock()
	list, err := evalNative(s.forEach, r.vars())
	vars := r.vars()
	r.mu.Unlock()
	items, ok := list.([]any)
	if err == nil && !ok {
		err = errors.New("for_each is not a list")
	}
	if err != nil {
		return r.finish(ctx, s.ID, nil, nil, fmt.Errorf("for_each: %w", err))
	}
	outs := make([]any, len(items))
	errs := make([]error, len(items))
	storeErrs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		key := s.ID + "#" + strconv.Itoa(i)
		r.mu.Lock()
		rec, had := r.st.Steps[key]
		r.mu.Unlock()
		if had && rec.Status == StatusDone {
			outs[i] = rec.Output
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			idx := i
			if storeErrs[i] = r.begin(ctx, key, s.ID, &idx); storeErrs[i] != nil {
				return
			}
			v := map[string]any{"inputs": vars["inputs"], "steps": vars["steps"], "item": it, "index": i}
			outs[i], errs[i] = r.exec(ctx, s, key, v)
			storeErrs[i] = r.finish(ctx, key, &idx, outs[i], errs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(storeErrs...); err != nil {
		return err
	}
	for i, e := range errs {
		if e != nil {
			return r.finish(ctx, s.ID, nil, nil, fmt.Errorf("item %d: %w", i, e))
		}
	}
	return r.finish(ctx, s.ID, nil, outs, nil)
}

func (r *runner) finish(ctx context.Context, key string, item *int, out any, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil // the run was stopped, not the step: it stays running and runs again on resume
	}
	rec := Record{Status: StatusDone, Output: out}
	if err != nil {
		rec = Record{Status: StatusFailed, Error: err.Error()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endLocked(ctx, key, item, rec)
}

// exec does a step's work once per attempt (1 + retry), each under the step's timeout,
// holding one of the run's Parallel slots.
func (r *runner) exec(ctx context.Context, s compiled, key string, vars map[string]any) (any, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-r.sem }()
	var err error
	for attempt := 0; attempt <= s.Retry; attempt++ {
		var out any
		out, err = r.once(ctx, s, key, vars)
		if err == nil || ctx.Err() != nil {
			return out, err
		}
	}
	return nil, err
}

func (r *runner) once(ctx context.Context, s compiled, key string, vars map[string]any) (any, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeout, fmt.Errorf("step timed out after %s", s.timeout))
		defer cancel()
	}
	session := "wf:" + r.id + ":" + key
	switch {
	case s.Tool != "":
		args, err := render(map[string]any(s.Args), "args", s.texts, vars)
		if err != nil {
			return nil, fmt.Errorf("args: %w", err)
		}
		if args == nil {
			args = map[string]any{}
		}
		b, _ := json.Marshal(args)
		res, err := r.opts.Call(ctx, s.Tool, b, session)
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, errors.New(res.Text())
		}
		return toolOutput(res), nil
	case s.Prompt != "":
		text, err := s.texts["prompt"].eval(vars)
		if err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
		return r.opts.Prompt(ctx, fmt.Sprint(text), session)
	default:
		text, err := s.texts["approval"].eval(vars)
		if err != nil {
			return nil, fmt.Errorf("approval: %w", err)
		}
		if r.opts.Approve == nil {
			return nil, errors.New("no one to ask for approval here")
		}
		args, _ := json.Marshal(map[string]any{"message": text})
		a, err := r.opts.Approve(ctx, loop.ToolCall{ID: session, Name: "approve_" + s.ID, Arguments: string(args)})
		if err != nil {
			return nil, err
		}
		if !a.Approved {
			return nil, fmt.Errorf("not approved: %s", a.Reason)
		}
		return map[string]any{"approved": true, "reason": a.Reason}, nil
	}
}

// toolOutput is a tool result as a value: its structured content, else its text parsed
// as JSON, else its text.
func toolOutput(res loop.ToolResult) any {
	var v any
	if len(res.Structured) > 0 && json.Unmarshal(res.Structured, &v) == nil {
		return v
	}
	if json.Unmarshal([]byte(res.Text()), &v) == nil {
		return v
	}
	return res.Text()
}
