package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Config is everything an Agent is built from. Zero values mean the documented default.
type Config struct {
	Name         string // the "agent" field of every event
	SystemPrompt string // stored once per session, as its first entry (L1)
	// ToolChoice is the first model call's tool choice: "" or "auto", "none", "required"
	// or a tool's name. Later calls of the run are "auto" (RunInput.ToolChoice overrides).
	ToolChoice string
	Model      Model
	ModelName  string // passed to the model as Request.Model
	Tools      *ToolSet
	Store      SessionStore // default: a new MemoryStore
	// StoreOutage is how long a run waits for its store when a write fails because the
	// store is unavailable (the error's StoreUnavailable() is true: a database restarting
	// or unreachable), writing again when it answers (rule L23, outage.go). 0: no wait,
	// the run fails with the write's error.
	StoreOutage time.Duration
	// Scrub, when set, is applied to every entry a run stores, just before it is written
	// (the [redact] guardrail's "store" stage): what is stored is what Scrub returns, while
	// the run itself goes on with the entries as they were. It must return a new entry,
	// never change the one it is given (the run still holds it).
	Scrub func(Entry) Entry

	Context       []ContextStrategy // default: []ContextStrategy{DefaultContext{}}
	ContextBudget int               // tokens, passed to strategies; 0 = none
	// CompactAt is the model-input size, in estimated tokens, past which the older half
	// of the history is summarised by the model into a stored compaction before the call
	// (compact.go); a context overflow is summarised the same way first. 0: never (the
	// strategies' own compaction on overflow only).
	CompactAt  int
	Hooks      []TerminationHook
	Guardrails []Guardrail
	Approver   Approver
	Permission PermissionFunc

	Retry      RetryPolicy
	ToolPolicy ToolPolicy
	Limits     Limits
	Pricing    Pricing

	MaxDecodeRetries   int // structured output decode retries (L10); default 2, <0 = none
	MaxContinuations   int // BeforeFinal continuations (L12); default 3, <0 = none
	MaxOverflowRetries int // context_overflow compactions per model call (L11); default 2
	// MaxTruncationRetries bounds the answers cut by max_tokens a run retries or
	// continues (L15); default 2, <0 = none.
	MaxTruncationRetries int
	// ContinueOnMaxTokens asks the model to continue a final text cut by max_tokens
	// instead of ending the run incomplete (L15).
	ContinueOnMaxTokens bool

	// Mode is ModeReact (the default) or ModePlan: plan, execute, evaluate, replan
	// (plan.go), configured by Plan.
	Mode string
	Plan PlanConfig

	// Handoffs are the agents of the Team this agent may hand the conversation to: the
	// model gets a transfer_to_NAME tool for each (team.go).
	Handoffs []string
	// AsTool lets the other agents of the Team call this one as the tool ask_NAME.
	AsTool bool
	// Description says what the agent is for, in the transfer_to and ask_ tools.
	Description string
	// MaxHandoffs bounds the hand-offs of a run that starts with this agent, and the
	// nesting of ask_ calls; default 5. AllowCycles lets a run hand back to an agent
	// already on its chain.
	MaxHandoffs int
	AllowCycles bool

	// Driver performs everything the loop does to the outside world: the clock, the
	// backoff sleep and jitter, spawning parallel tool calls, and calling the Model, the
	// Tools and the Store above; default GoDriver.
	Driver Driver
}

// The modes of Config.Mode.
const (
	ModeReact = "react"
	ModePlan  = "plan"
)

// ToolPolicy bounds tool use. Zero fields take defaults; a negative value disables a cap.
type ToolPolicy struct {
	MaxParallel       int      // calls run at once; default 1
	MaxDuplicateCalls int      // same tool + same canonical args; default 2 (L8)
	MaxCallsPerTool   int      // default: no cap
	MaxCallsPerRun    int      // default: no cap
	RequireApproval   []string // tool names that need an Approver's yes (L6); "*" = all
	// ApprovalDefault is the verdict for tools RequireApproval does not list: allow
	// (default), ask or deny (L6).
	ApprovalDefault PermissionVerdict
	Timeout         time.Duration
}

// Limits end a run with a summary (L9). Zero fields take defaults; MaxIterations
// defaults to 50, the others to none.
type Limits struct {
	MaxIterations  int
	MaxToolRounds  int
	MaxRunDuration time.Duration
	MaxTokens      int     // total tokens over the run
	MaxCostUSD     float64 // over the run
}

// Pricing turns usage into cost when the provider does not report one.
type Pricing struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
}

// RunInput starts or continues a run. An empty SessionID starts a new session; an empty
// RunID gets a generated one. ToolPolicy and Limits fields that are non-zero override the
// agent's for this run.
type RunInput struct {
	SessionID            string
	RunID                string
	Messages             []Message
	SystemPromptOverride string
	AllowedTools         []string // nil = all
	ToolOrder            []string
	ToolPolicy           ToolPolicy
	Limits               Limits
	OutputSchema         json.RawMessage
	Metadata             map[string]string
	// User is who the run is for, as the surface that started it knows them (the CLI's
	// --user, AG-UI's forwardedProps.user, an MCP client's identity); "" is anonymous.
	// The loop records it (run_started) and gives it to every hook, strategy and tool
	// through CallInfo: per-user state (memory) keys on it, never on a tool argument.
	User string
	// Approvals answers approval requests by tool call id, before the Approver is asked:
	// how a run interrupted for approval (StatusInterrupted) is resumed.
	Approvals map[string]Approval
	// ClientTools are tools the caller executes itself (L16): offered to the model, never
	// run by the host. A call of one ends the run interrupted/client_tool_call with the
	// call in RunResult.PendingCalls; the next run supplies its result as a tool message
	// with the call's id.
	ClientTools []ToolSpec
	// ContinueOnMaxTokens is Config.ContinueOnMaxTokens for this run.
	ContinueOnMaxTokens bool
	// ToolChoice overrides Config.ToolChoice for this run's first model call.
	ToolChoice string
	// TraceID is the run's distributed-trace id, if the host traces it; every event of
	// the run carries it, so a client can find the run's trace.
	TraceID string
	// State is the client's state for this run (AG-UI's state): handed to the context
	// strategies, which may replace it (ContextOutput.State); each change is a state
	// event. nil is no state.
	State json.RawMessage
	// Agent names the Team agent that starts the run ("": this one).
	Agent string
	// forceReact runs a plan-mode agent as a ReAct loop: a plan step's sub-run.
	forceReact bool
	// direct is the one call of a run Agent.CallTool started (direct.go); approver
	// overrides Config.Approver for it.
	direct        *ToolCall
	approver      Approver
	directTimeout time.Duration
	directResult  *ToolResult
	// ClientContext is what the client says about its situation (AG-UI's context):
	// handed to the context strategies; DefaultContext puts it in the system message.
	ClientContext []ContextItem
}

// ContextItem is one piece of client context: what it is, and its value.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// RunResult is how a run ended.
type RunResult struct {
	SessionID string
	RunID     string
	Status    Status
	Reason    Reason
	Final     *Message
	Output    json.RawMessage
	Err       error
	Usage     Usage
	// StopReason is the stop reason of the last model answer (L15).
	StopReason StopReason
	// PendingCalls are the client tool calls the caller must answer (L16).
	PendingCalls []ToolCall
}

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

// RunStream runs in a new goroutine and delivers every event on the returned channel,
// which is closed after run_finished. The run never waits for the reader: events queue
// in memory, and a reader that stops reading only leaks the queue until ctx ends.
func (a *Agent) RunStream(ctx context.Context, in RunInput) <-chan Event {
	ch, _ := a.stream(ctx, in)
	return ch
}

// Events runs and yields every event in order, then, if the run failed, one last pair
// with a zero Event and the run's error. Breaking out of the loop aborts the run and
// waits for it to end, so the session is free again when Events returns.
func (a *Agent) Events(ctx context.Context, in RunInput) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		ch, result := a.stream(ctx, in)
		for e := range ch {
			if !yield(e, nil) {
				cancel(ErrAborted)
				for range ch { // let the run store its end
				}
				return
			}
		}
		if err := result(); err != nil {
			yield(Event{}, err)
		}
	}
}

// stream runs in a new goroutine. A queue between the run and the channel means the run
// never blocks on a slow or gone reader; the forwarder gives up when ctx ends. result
// returns the run's error once the channel is closed.
func (a *Agent) stream(ctx context.Context, in RunInput) (<-chan Event, func() error) {
	ch := make(chan Event, 64)
	var (
		mu     sync.Mutex
		queue  []Event
		closed bool
		runErr error
		wake   = make(chan struct{}, 1)
	)
	push := func(e Event) {
		mu.Lock()
		queue = append(queue, e)
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go func() { // the run
		emitted := false
		_, err := a.RunWith(ctx, in, func(e Event) { emitted = true; push(e) })
		if err != nil && !emitted {
			// The run never started: report it in the event vocabulary anyway.
			now := time.Now()
			push(Event{Seq: 1, Time: now, SessionID: in.SessionID, RunID: in.RunID, Agent: a.cfg.Name,
				Type: EventError, Data: ErrorData{Kind: "invalid_input", Message: err.Error()}})
			push(Event{Seq: 2, Time: now, SessionID: in.SessionID, RunID: in.RunID, Agent: a.cfg.Name,
				Type: EventRunFinished, Data: RunFinishedData{Status: StatusFailed, Reason: ReasonError}})
		}
		mu.Lock()
		closed, runErr = true, err
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}()
	go func() { // the forwarder
		defer close(ch)
		for {
			mu.Lock()
			batch, end := queue, closed
			queue = nil
			mu.Unlock()
			for _, e := range batch {
				select {
				case ch <- e:
				case <-ctx.Done():
					if !a.drainAfterCancel(ch, e) {
						return
					}
				}
			}
			if end && len(batch) == 0 {
				return
			}
			if !end {
				<-wake
			}
		}
	}()
	return ch, func() error {
		mu.Lock()
		defer mu.Unlock()
		return runErr
	}
}

// drainAfterCancel tries once more to deliver e after ctx ended, without blocking: a
// reader still reading (Events draining after a break) gets the run's last events; a
// reader that is gone does not hold the forwarder.
func (a *Agent) drainAfterCancel(ch chan<- Event, e Event) bool {
	select {
	case ch <- e:
		return true
	default:
		return false
	}
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
		in.SessionID = "ses_" + newID()
	}
	if in.RunID == "" {
		in.RunID = "run_" + newID()
	}
	a.mu.Lock()
	if _, busy := a.sessions[in.SessionID]; busy {
		a.mu.Unlock()
		return nil, &startError{fmt.Errorf("loop: session %q: %w", in.SessionID, ErrSessionBusy)}
	}
	// Hooks, guardrails and context strategies see which run they serve (CallInfo);
	// tool calls add their call id (toolexec.go).
	ctx = WithCallInfo(ctx, CallInfo{SessionID: in.SessionID, RunID: in.RunID, Agent: a.cfg.Name, User: in.User})
	rctx, cancel := context.WithCancelCause(ctx)
	a.runs[runKey{in.SessionID, in.RunID}] = cancel
	a.sessions[in.SessionID] = in.RunID
	a.mu.Unlock()
	if err := a.claim(rctx, in, cancel); err != nil { // the store's side: lease, run id (lease.go)
		return nil, &startError{err}
	}
	return newRun(a, rctx, cancel, in, emit), nil
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

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func defaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
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

func (p ToolPolicy) merge(o ToolPolicy) ToolPolicy {
	if o.MaxParallel != 0 {
		p.MaxParallel = o.MaxParallel
	}
	if o.MaxDuplicateCalls != 0 {
		p.MaxDuplicateCalls = o.MaxDuplicateCalls
	}
	if o.MaxCallsPerTool != 0 {
		p.MaxCallsPerTool = o.MaxCallsPerTool
	}
	if o.MaxCallsPerRun != 0 {
		p.MaxCallsPerRun = o.MaxCallsPerRun
	}
	if o.RequireApproval != nil {
		p.RequireApproval = o.RequireApproval
	}
	if o.Timeout != 0 {
		p.Timeout = o.Timeout
	}
	if o.ApprovalDefault != "" {
		p.ApprovalDefault = o.ApprovalDefault
	}
	return p
}

func (p ToolPolicy) withDefaults() ToolPolicy {
	if p.MaxParallel <= 0 {
		p.MaxParallel = 1
	}
	p.MaxDuplicateCalls = defaultInt(p.MaxDuplicateCalls, 2)
	return p
}

func (l Limits) merge(o Limits) Limits {
	if o.MaxIterations != 0 {
		l.MaxIterations = o.MaxIterations
	}
	if o.MaxToolRounds != 0 {
		l.MaxToolRounds = o.MaxToolRounds
	}
	if o.MaxRunDuration != 0 {
		l.MaxRunDuration = o.MaxRunDuration
	}
	if o.MaxTokens != 0 {
		l.MaxTokens = o.MaxTokens
	}
	if o.MaxCostUSD != 0 {
		l.MaxCostUSD = o.MaxCostUSD
	}
	return l
}

func (l Limits) withDefaults() Limits {
	l.MaxIterations = defaultInt(l.MaxIterations, 50)
	return l
}
