package loop

import "encoding/json"

// nextKind is what a step decided the run does next (the way openai-agents' run loop
// dispatches on next_step): the step functions decide, and iterate performs the
// decision — another step, a hand-off, or, through finish, the ending. No step ends a
// run on its own.
type nextKind int

const (
	nextRunAgain   nextKind = iota // call the model again
	nextComplete                   // the work is done: reason, text, output
	nextSummarize                  // a limit or policy stopped the run: reason, text (L9)
	nextIncomplete                 // ended incomplete without a summary call: reason, final
	nextInterrupt                  // waiting for a human or a client: reason (L6, L16)
	nextStructured                 // decode the final answer against the schema (L10)
	nextFail                       // err, or an abort if the run was cancelled
	nextFailWith                   // failed for reason (content_filter, plan_failed): err says why
)

// next is a step's decision.
type next struct {
	kind       nextKind
	reason     Reason
	text       string
	output     json.RawMessage
	final      *Message
	msg        Message // nextStructured
	withSchema bool    // nextStructured
	err        error
	abort      bool // nextFail: the run was cancelled; err is the cause
	handoff    bool // a transfer was accepted: the run goes on under its target first (team.go)
}

func aborted(cause error) next       { return next{kind: nextFail, err: cause, abort: true} }
func failedOrAborted(err error) next { return next{kind: nextFail, err: err} }
func summary(reason Reason, text string) next {
	return next{kind: nextSummarize, reason: reason, text: text}
}

// finish performs a decision that ends the run.
func (r *run) finish(n next) RunResult {
	switch n.kind {
	case nextComplete:
		return r.complete(n.reason, n.text, n.output)
	case nextSummarize:
		return r.summarize(n.reason, n.text)
	case nextIncomplete:
		if n.final != nil {
			return r.endFinal(StatusIncomplete, n.reason, *n.final, nil)
		}
		return r.end(StatusIncomplete, n.reason, nil, nil, nil)
	case nextInterrupt:
		return r.end(StatusInterrupted, n.reason, nil, nil, nil)
	case nextStructured:
		return r.structured(n.msg, n.withSchema)
	case nextFailWith:
		r.journal.emit(EventError, &ErrorData{Kind: string(n.reason), Message: n.err.Error()})
		return r.end(StatusFailed, n.reason, nil, nil, n.err)
	default:
		if n.abort {
			return r.abort(n.err)
		}
		return r.failOrAbort(n.err)
	}
}
