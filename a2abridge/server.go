package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agenthost/agenthost/loop"
)

// RunFunc runs one agenthost run (surface/server's A2A run path), emitting its events.
type RunFunc func(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error)

// SessionPrefix starts the session of an A2A context: "a2a-" + the context id.
const SessionPrefix = "a2a-"

// Executor is the a2asrv.AgentExecutor of an agenthost agent.
//
// A message is the user's turn of the context's session. The text the agent writes streams
// as it is produced, as artifact updates (one artifact per model answer, see streamer); a
// run that completes then ends the task completed, its final text also in the status
// message; one that stops for an approval leaves the task input-required, saying which
// tool waits; a reply to that task of "approve" (or "yes") approves the waiting calls and
// anything else rejects them, as the console's buttons would, and a data part in the reply
// answers with a scope, as the console's choice does (answer.go); any other end fails the task
// with the run's reason.
type Executor struct {
	Run RunFunc
	// Abort stops the session's run of that id for the caller on ctx (tasks/cancel).
	Abort func(ctx context.Context, session, run string) bool
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// Execute runs the agent for one message. The run goes on in its own goroutine, which
// hands the events it translates to this one (the SDK's), so yield is only ever called
// here; if the SDK stops reading, the run is cancelled.
func (x *Executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		in := loop.RunInput{SessionID: SessionPrefix + ec.ContextID, RunID: runID(ec)}
		if pending := pendingCalls(ec.StoredTask); len(pending) > 0 {
			a := answerOf(ec.Message) // answer.go
			in.Approvals = map[string]loop.Approval{}
			for _, id := range pending {
				in.Approvals[id] = a
			}
		} else {
			in.Messages = []loop.Message{{Role: loop.RoleUser, Content: messageParts(ec.Message)}}
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan a2a.Event, 64)
		s := &streamer{info: ec, run: in.RunID}
		var res loop.RunResult
		var err error
		go func() {
			defer close(events)
			res, err = x.Run(ctx, in, func(e loop.Event) {
				for _, ev := range s.translate(e) {
					select {
					case events <- ev:
					case <-ctx.Done():
						return
					}
				}
			})
		}()
		reading := true
		for ev := range events { // until the run's goroutine is done
			if reading && !yield(ev, nil) {
				reading = false
				cancel()
			}
		}
		if reading {
			yield(outcome(ec, res, err, s.asked), nil)
		}
	}
}

// Cancel aborts the task's run.
func (x *Executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if x.Abort != nil && ec.StoredTask != nil {
			x.Abort(ctx, SessionPrefix+ec.ContextID, lastRun(ec.StoredTask))
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// runID names the run of a task's step: the task id, and the message id for a later step
// (an approval) of the same task, so each run of a session has its own id.
func runID(ec *a2asrv.ExecutorContext) string {
	id := "a2a-" + string(ec.TaskID)
	if ec.StoredTask != nil && ec.Message != nil {
		id += "-" + ec.Message.ID
	}
	return id
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return partsText(m.Parts)
}

// messageParts is an A2A message as loop parts: its text, and its file parts (raw bytes,
// with their filename) as media the loop sniffs, bounds and stores with the session; a
// file by URL is an image URL when its media type says image, else named in a text part
// (the host fetches nothing). The mediaType given is not trusted.
func messageParts(m *a2a.Message) []loop.Part {
	var out []loop.Part
	if m != nil {
		for _, p := range m.Parts {
			switch {
			case p == nil:
			case p.Raw() != nil:
				out = append(out, loop.Part{Type: loop.PartFile, Data: p.Raw(), Name: p.Filename})
			case p.URL() != "" && strings.HasPrefix(p.MediaType, "image/"):
				out = append(out, loop.Part{Type: loop.PartImage, URL: string(p.URL()), MimeType: p.MediaType})
			case p.URL() != "":
				out = append(out, loop.TextPart("(a file at "+string(p.URL())+", not fetched)"))
			case p.Text() != "":
				out = append(out, loop.TextPart(p.Text()))
			}
		}
	}
	if len(out) == 0 {
		out = []loop.Part{loop.TextPart("")}
	}
	return out
}

func partsText(parts a2a.ContentParts) string {
	var sb strings.Builder
	for _, p := range parts {
		if p != nil {
			sb.WriteString(p.Text())
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
func outcome(ec *a2asrv.ExecutorContext, res loop.RunResult, err error, asked []loop.ToolCallData) a2a.Event {
	final := func(state a2a.TaskState, text string, meta map[string]any) a2a.Event {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
		msg.Metadata = meta
		return a2a.NewStatusUpdateEvent(ec, state, msg)
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
