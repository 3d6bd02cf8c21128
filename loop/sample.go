package loop

import (
	"context"
	"errors"
	"fmt"
)

// SampleInput is one model call asked for by something that is not the run's model: a
// plugin's create_message, an MCP server's sampling request (rule L24).
type SampleInput struct {
	SessionID string    // the sampling's own session ("" starts a new one)
	RunID     string    // "" gets a generated one
	Messages  []Message // the caller's messages, its system prompt first if it has one
	MaxTokens int       // the caller's cap on the answer (0: the model's default)
	// Caller names who asked ("plugin:x", "mcp:server"): the request's metadata, so the
	// provider and its traces see whose call it is.
	Caller  string
	TraceID string
	User    string // the caller's user (RunInput.User)
}

// SampleResult is the answer of a sampling: its text after the output guardrails and
// the model's stop reason.
type SampleResult struct {
	Text  string
	Stop  StopReason
	Model string // the model that answered (Config.ModelName)
}

// MaxSampleDepth bounds samplings nested in samplings: a guardrail or a tool that a
// sampling's path reaches and that asks for a sampling again, and so on. The first
// sampling is depth 1; one past the bound is refused with ErrSampleDepth.
const MaxSampleDepth = 2

// ErrSampleDepth refuses a sampling nested deeper than MaxSampleDepth.
var ErrSampleDepth = fmt.Errorf("sampling nested more than %d deep (a sampling that asks for a sampling)", MaxSampleDepth)

type sampleDepthKey struct{}

// Sample makes one model call for a caller that is not the run's model, through the
// loop's model-call path (L24): it is a run of its own on in.SessionID, nested in the
// run on ctx if there is one (it joins that run's ledger, so the call is admitted
// against its budgets and charged to it). Every message passes the input guardrails
// (a block refuses the call), the call is made with retries and no tools, the answer
// passes the output guardrails (a block refuses it: the caller gets an error, the
// session keeps no blocked text), and the messages and the answer are stored in the
// session. A refusal is the returned error; the RunResult says how the run ended.
func (a *Agent) Sample(ctx context.Context, in SampleInput, emit func(Event)) (SampleResult, RunResult, error) {
	depth, _ := ctx.Value(sampleDepthKey{}).(int)
	if depth >= MaxSampleDepth {
		return SampleResult{}, RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: StatusFailed, Reason: ReasonError, Err: ErrSampleDepth}, ErrSampleDepth
	}
	ctx = context.WithValue(ctx, sampleDepthKey{}, depth+1)
	if len(in.Messages) == 0 {
		err := errors.New("loop: a sampling needs messages")
		return SampleResult{}, RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: StatusFailed, Reason: ReasonError, Err: err}, err
	}
	if parent, _ := ctx.Value(noticeKey{}).(*journal); parent != nil {
		emit = forwardTo(parent, "sampling:"+in.Caller, emit)
	}
	var out SampleResult
	rin := RunInput{SessionID: in.SessionID, RunID: in.RunID, TraceID: in.TraceID, User: in.User, Messages: in.Messages,
		Metadata: map[string]string{"caller": in.Caller}, AllowedTools: []string{},
		sample: &sampleCall{maxTokens: in.MaxTokens, out: &out}}
	res, err := a.RunWith(ctx, rin, emit)
	if err == nil && res.Status != StatusCompleted {
		err = fmt.Errorf("the sampling run ended %s/%s", res.Status, res.Reason)
	}
	return out, res, err
}

// forwardTo is the emit of a sampling made inside a run (a tool's create_message, an
// MCP server's request during a tool call): its events go where emit sends them and
// reach the calling run's stream too, with their path (AGENT/sampling:CALLER), as a
// nested run's do — the caller's client sees the nested model call as it happens.
func forwardTo(parent *journal, name string, emit func(Event)) func(Event) {
	return func(e Event) {
		if emit != nil {
			emit(e)
		}
		if e.Path == "" {
			e.Path = name
		}
		e.Path = parent.agent + "/" + e.Path
		parent.forward(e)
	}
}

// sampleCall is what a run Agent.Sample started carries: the caller's cap and where
// the answer goes.
type sampleCall struct {
	maxTokens int
	out       *SampleResult
}

// sampleRun is the body of a run Agent.Sample started: guard and store the messages,
// one model call without tools, guard and store the answer, the end.
func (r *run) sampleRun(head SessionHead) RunResult {
	r.journal.seq = r.transcript.project(head)
	msgs := make([]Message, 0, len(r.in.Messages))
	for _, m := range r.in.Messages {
		text, err := r.guardParts(StageInput, m.Text(), "", m.Content) // every message is the caller's, not only the user's
		if err != nil {
			return r.fail(err)
		}
		if text != m.Text() {
			m.Content = []Part{TextPart(text)}
		}
		r.appendMessage(m)
		msgs = append(msgs, m)
	}
	if err := r.checkBudget(msgs); err != nil {
		return r.end(StatusIncomplete, ReasonBudgetExceeded, nil, nil, fmt.Errorf("sampling refused: %w", err))
	}
	if err := r.journal.flush(); err != nil { // the request is stored before the call (L21)
		return r.failOrAbort(err)
	}
	req := Request{Model: r.cfg.ModelName, Messages: msgs, MaxTokens: r.in.sample.maxTokens,
		Metadata: RequestMetadata{SessionID: r.in.SessionID, RunID: r.in.RunID, Extra: r.in.Metadata}}
	resp, err := r.retrying(r.work, req)
	if err != nil {
		return r.failOrAbort(err)
	}
	text, err := r.guard(StageOutput, resp.message.Text(), "")
	if err != nil {
		return r.fail(err)
	}
	final := Message{Role: RoleAssistant, Content: []Part{TextPart(text)}}
	r.appendMessage(final)
	*r.in.sample.out = SampleResult{Text: text, Stop: resp.stop, Model: r.cfg.ModelName}
	return r.end(StatusCompleted, ReasonSampled, &final, nil, nil)
}
