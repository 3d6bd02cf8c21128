package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrSessionBusy is returned when a session already has a run in progress.
var ErrSessionBusy = errors.New("session already has a run in progress")

// ErrApprovalPending is what an Approver returns to interrupt the run instead of
// waiting: the run ends with StatusInterrupted and the call keeps no result, so a later
// run on the session (with RunInput.Approvals) executes or rejects it.
var ErrApprovalPending = errors.New("approval pending")

// ErrAborted is the cancellation cause Abort uses.
var ErrAborted = errors.New("run aborted")

// Agent runs the loop. It is safe for concurrent runs on different sessions.
type Agent struct {
	cfg  Config
	team *Team // set by NewTeam

	mu       sync.Mutex
	runs     map[runKey]context.CancelCauseFunc // live run → cancel
	sessions map[string]string                  // session id → run id
	held     sync.Map                           // runKey → *heldSession (lease.go)
}

// runKey names a live run. Run ids are unique per session, not globally: two sessions
// may each have a live run of the same id in one process, and an abort names both.
type runKey struct{ session, run string }

// New checks the configuration and fills in defaults.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("loop: config has no model")
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Context == nil {
		cfg.Context = []ContextStrategy{DefaultContext{}}
	}
	for i, s := range cfg.Context {
		if s == nil {
			return nil, fmt.Errorf("loop: context strategy %d is nil", i)
		}
	}
	for i, h := range cfg.Hooks {
		if h == nil {
			return nil, fmt.Errorf("loop: termination hook %d is nil", i)
		}
	}
	for i, g := range cfg.Guardrails {
		if g == nil {
			return nil, fmt.Errorf("loop: guardrail %d is nil", i)
		}
	}
	switch cfg.ToolPolicy.ApprovalDefault {
	case "", PermitAllow, PermitAsk, PermitDeny:
	default:
		return nil, fmt.Errorf("loop: approval_default %q is not allow, ask or deny", cfg.ToolPolicy.ApprovalDefault)
	}
	cfg.Retry = cfg.Retry.withDefaults()
	cfg.ToolPolicy = ToolPolicy{}.merge(cfg.ToolPolicy).withDefaults()
	cfg.Limits = Limits{}.merge(cfg.Limits).withDefaults()
	cfg.MaxDecodeRetries = defaultInt(cfg.MaxDecodeRetries, 2)
	cfg.MaxContinuations = defaultInt(cfg.MaxContinuations, 3)
	cfg.MaxOverflowRetries = defaultInt(cfg.MaxOverflowRetries, 2)
	cfg.MaxTruncationRetries = defaultInt(cfg.MaxTruncationRetries, 2)
	cfg.MaxHandoffs = defaultInt(cfg.MaxHandoffs, 5)
	switch cfg.Mode {
	case "", ModeReact, ModePlan:
	default:
		return nil, fmt.Errorf("loop: mode %q is not react or plan", cfg.Mode)
	}
	if cfg.Driver == nil {
		cfg.Driver = GoDriver{}
	}
	return &Agent{cfg: cfg, runs: map[runKey]context.CancelCauseFunc{}, sessions: map[string]string{}}, nil
}

// Store returns the agent's session store.
func (a *Agent) Store() SessionStore { return a.cfg.Store }

// Run runs to the end and returns the result; the error is the result's Err.
func (a *Agent) Run(ctx context.Context, in RunInput) (RunResult, error) {
	return a.RunWith(ctx, in, nil)
}

// RunWith runs to the end, calling emit with every event as it happens, in order and
// never concurrently: from the run's goroutine, or for a plugin's plugin_log and progress
// (Notify) from the goroutine of the tool that reported it. emit must not block for
// long: the run waits for it.
func (a *Agent) RunWith(ctx context.Context, in RunInput, emit func(Event)) (RunResult, error) {
	if in.Agent != "" && in.Agent != a.cfg.Name {
		other, err := a.teamAgent(in.Agent)
		if err != nil {
			return RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: StatusFailed, Reason: ReasonError, Err: err}, err
		}
		return other.RunWith(ctx, in, emit)
	}
	r, err := a.start(ctx, in, emit)
	if err != nil {
		return RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: StatusFailed, Reason: ReasonError, Err: err}, err
	}
	res := r.execute()
	a.finish(r)
	r.journal.deliverEnd() // after finish: the session is free when run_finished arrives
	return res, res.Err
}

// Abort cancels the session's run of that id if it is in progress. It reports false
// when no such run is active. The session keeps everything the run stored. The session
// is part of the name: another session's run of the same id is another run.
func (a *Agent) Abort(sessionID, runID string) bool {
	k := runKey{sessionID, runID}
	if a.abortOwn(k) {
		return true
	}
	if a.team != nil { // a run started through this agent for another (RunInput.Agent)
		for _, other := range a.team.order {
			if b := a.team.agents[other]; b != a && b.abortOwn(k) {
				return true
			}
		}
	}
	return false
}

func (a *Agent) abortOwn(k runKey) bool {
	a.mu.Lock()
	cancel, ok := a.runs[k]
	a.mu.Unlock()
	if ok {
		cancel(ErrAborted)
	}
	return ok
}

// Running is the number of runs in progress.
func (a *Agent) Running() int {
	if a.team != nil { // the runs of the whole team, which shares plugins and providers
		n := 0
		for _, b := range a.team.agents {
			n += b.ownRuns()
		}
		return n
	}
	return a.ownRuns()
}

func (a *Agent) ownRuns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.runs)
}

// startError marks an error found before a run began.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func (a *Agent) start(ctx context.Context, in RunInput, emit func(Event)) (*run, error) {
	if ctx == nil {
		return nil, &startError{errors.New("loop: nil context")}
	}
	in.Messages = validUTF8(in.Messages)
	for i, m := range in.Messages {
		if err := checkInputMessage(m); err != nil {
			return nil, &startError{fmt.Errorf("loop: message %d: %w", i, err)}
		}
	}
	if err := CheckUser(in.User); err != nil {
		return nil, &startError{fmt.Errorf("loop: %w", err)}
	}
	for _, ct := range in.ClientTools {
		if ct.Name == "" {
			return nil, &startError{errors.New("loop: client tool without a name")}
		}
		if a.cfg.Tools.lookup(ct.Name) != nil {
			return nil, &startError{fmt.Errorf("loop: client tool %q has the name of a host tool", ct.Name)}
		}
	}
	if in.SessionID == "" {
		in.SessionID = a.newID("ses_")
	}
	if in.RunID == "" {
		in.RunID = a.newID("run_")
	}
	r := &run{a: a, cfg: &a.cfg, in: in}
	rctx, cancel := context.WithCancelCause(r.context(ctx))
	a.mu.Lock()
	if _, busy := a.sessions[in.SessionID]; busy {
		a.mu.Unlock()
		cancel(nil)
		return nil, &startError{fmt.Errorf("loop: session %q: %w", in.SessionID, ErrSessionBusy)}
	}
	a.runs[runKey{in.SessionID, in.RunID}] = cancel
	a.sessions[in.SessionID] = in.RunID
	a.mu.Unlock()
	h, err := a.claim(rctx, in, cancel) // the store's side: lease, run id (lease.go)
	if err != nil {
		return nil, &startError{err}
	}
	r.init(rctx, cancel, emit)
	if h != nil && h.pending {
		r.journal.claim = h // taken with the run's first write (claimwrite.go)
	}
	return r, nil
}

func (a *Agent) finish(r *run) {
	r.stopWork()
	r.cancel(nil)
	a.unclaim(runKey{r.in.SessionID, r.in.RunID})
	a.mu.Lock()
	delete(a.runs, runKey{r.in.SessionID, r.in.RunID})
	delete(a.sessions, r.in.SessionID)
	a.mu.Unlock()
}

func checkInputMessage(m Message) error {
	switch m.Role {
	case RoleUser, RoleSystem, RoleAssistant:
	case RoleTool:
		if m.ToolCallID == "" {
			return errors.New("tool message without tool_call_id")
		}
	case "":
		return errors.New("message has no role")
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	if len(m.Content) == 0 && len(m.ToolCalls) == 0 {
		return fmt.Errorf("%s message has no content", m.Role)
	}
	return nil
}

// newID is prefix followed by 16 random hex digits, built in one allocation.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	buf := make([]byte, 0, 24)
	buf = append(buf, prefix...)
	return string(hex.AppendEncode(buf, b[:]))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
