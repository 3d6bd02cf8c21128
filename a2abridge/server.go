package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/agenthost/agenthost/loop"
)

// RunFunc runs one agenthost run (surface/server's A2A run path), emitting its events.
type RunFunc func(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error)

// SessionPrefix starts the session of an A2A context: "a2a-" + the context id.
const SessionPrefix = "a2a-"

// Executor is the a2asrv.AgentExecutor of an agenthost agent.
//
// A message is the user's turn of the context's session. A run that completes answers
// with an artifact holding the final text and the task completed; one that stops for an
// approval leaves the task input-required, saying which tool waits; a reply to that task
// of "approve" (or "yes") approves the waiting calls and anything else rejects them, as
// the console's buttons would; any other end fails the task with the run's reason.
type Executor struct {
	Run   RunFunc
	Abort func(session, run string) bool
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// Execute runs the agent for one message.
func (x *Executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateSubmitted, nil)); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	in := loop.RunInput{SessionID: SessionPrefix + rc.ContextID, RunID: runID(rc)}
	text := textOf(rc.Message)
	if pending := pendingCalls(rc.StoredTask); len(pending) > 0 {
		ok := isYes(text)
		in.Approvals = map[string]loop.Approval{}
		for _, id := range pending {
			in.Approvals[id] = loop.Approval{Approved: ok, Reason: map[bool]string{true: "", false: "rejected over A2A: " + text}[ok]}
		}
	} else {
		in.Messages = []loop.Message{loop.UserMessage(text)}
	}
	var asked []loop.ToolCallData // approvals the run stopped for
	res, err := x.Run(ctx, in, func(e loop.Event) {
		if d, ok := e.Data.(*loop.ToolCallData); ok && e.Type == loop.EventApproval {
			asked = append(asked, *d)
		}
	})
	return q.Write(ctx, outcome(rc, res, err, asked))
}

// Cancel aborts the task's run.
func (x *Executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if x.Abort != nil && rc.StoredTask != nil {
		x.Abort(SessionPrefix+rc.ContextID, lastRun(rc.StoredTask))
	}
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// runID names the run of a task's step: the task id, and the message id for a later step
// (an approval) of the same task, so each run of a session has its own id.
func runID(rc *a2asrv.RequestContext) string {
	id := "a2a-" + string(rc.TaskID)
	if rc.StoredTask != nil && rc.Message != nil {
		id += "-" + rc.Message.ID
	}
	return id
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(a2a.TextPart); ok {
			sb.WriteString(t.Text)
		} else if t, ok := p.(*a2a.TextPart); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

func isYes(s string) bool {
	switch strings.ToLower(strings.TrimSpace(strings.TrimRight(s, ".!"))) {
	case "approve", "approved", "yes", "y", "ok":
		return true
	}
	return false
}

// Task metadata keys: the run a task step ran as, and the calls waiting for approval.
const (
	metaRun     = "agenthost.run"
	metaPending = "agenthost.pending_approvals"
	// metaRetryAfter is set on a task the host's admission refused (loop.ErrOverloaded):
	// the seconds to wait before sending the message again.
	metaRetryAfter = "agenthost.retry_after"
)

func pendingCalls(t *a2a.Task) []string {
	if t == nil || t.Status.State != a2a.TaskStateInputRequired || t.Status.Message == nil {
		return nil
	}
	raw, _ := t.Status.Message.Metadata[metaPending].([]any)
	var out []string
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func lastRun(t *a2a.Task) string {
	if t.Status.Message != nil {
		if s, ok := t.Status.Message.Metadata[metaRun].(string); ok {
			return s
		}
	}
	return ""
}

// outcome is the task's final status for a run's result.
func outcome(rc *a2asrv.RequestContext, res loop.RunResult, err error, asked []loop.ToolCallData) a2a.Event {
	final := func(state a2a.TaskState, text string, meta map[string]any) a2a.Event {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: text})
		msg.Metadata = meta
		ev := a2a.NewStatusUpdateEvent(rc, state, msg)
		ev.Final = true
		return ev
	}
	meta := map[string]any{metaRun: res.RunID}
	if secs, ok := loop.RetryAfterOf(err); ok {
		meta[metaRetryAfter] = secs // the host's admission refused the run: try again later
	}
	switch {
	case err != nil && res.Status == "":
		return final(a2a.TaskStateFailed, err.Error(), meta)
	case res.Status == loop.StatusCompleted:
		text := ""
		if res.Final != nil {
			text = res.Final.Text()
		}
		return final(a2a.TaskStateCompleted, text, meta)
	case res.Status == loop.StatusInterrupted:
		var ids, names []string
		for _, c := range asked {
			ids = append(ids, c.ID)
			names = append(names, c.Name)
		}
		if len(ids) == 0 {
			return final(a2a.TaskStateFailed, "the run stopped for a client tool, which A2A does not carry", meta)
		}
		pending := make([]any, len(ids))
		for i, id := range ids {
			pending[i] = id
		}
		meta[metaPending] = pending
		return final(a2a.TaskStateInputRequired, fmt.Sprintf("approval required for %s: reply \"approve\" or give a reason to reject", strings.Join(names, ", ")), meta)
	}
	msg := string(res.Status) + " (" + string(res.Reason) + ")"
	if res.Err != nil && !errors.Is(res.Err, context.Canceled) {
		msg += ": " + res.Err.Error()
	}
	return final(a2a.TaskStateFailed, msg, meta)
}
