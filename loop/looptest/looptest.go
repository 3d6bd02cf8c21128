// Package looptest helps test code that drives or embeds the agent loop, the way
// net/http/httptest helps with handlers: a scripted Model that answers model calls
// from a list of turns and records every request, and builders for the delta streams
// real providers send (text split in pieces, tool-call arguments in fragments, usage,
// a finish with its stop reason).
//
// It must not depend on anything but package loop, and it never sleeps or reads a
// clock: a turn that should hang blocks on the call's context only.
package looptest

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// Turn is one scripted model answer. Deltas, when set, are sent as they are; otherwise
// Text and Calls are streamed the way providers stream them (see Deltas).
type Turn struct {
	Reasoning string // sent first, in one delta
	Text      string
	Chunk     int // stream Text in pieces of this many runes; 0 = two halves
	Calls     []loop.ToolCall
	Usage     *loop.Usage
	Stop      string       // the finish reason; default tool_use with calls, end_turn without
	Deltas    []loop.Delta // sent as is
	Err       error        // Stream fails with it
	Hang      bool         // the stream blocks until the call's context ends
	// Started, when set, gets a value (without blocking) when the call starts, so a
	// test can wait for the loop to reach its model call.
	Started chan<- struct{}
}

// ErrOutOfTurns is the error of a model call made after the last turn.
var ErrOutOfTurns = errors.New("looptest: out of turns")

// Model answers model calls with its turns, in order. It is safe for concurrent use.
type Model struct {
	mu         sync.Mutex
	turns      []Turn
	next       map[string]int // per session (or "" for all) the next turn
	perSession bool
	repeat     bool
	reqs       []loop.Request
}

// NewModel returns a Model that plays turns, one per model call.
func NewModel(turns ...Turn) *Model { return &Model{turns: turns, next: map[string]int{}} }

// NewSessionModel returns a Model that plays turns from the first for each session
// (the request's Metadata.SessionID), so concurrent runs on different sessions do not
// take each other's turns.
func NewSessionModel(turns ...Turn) *Model {
	m := NewModel(turns...)
	m.perSession = true
	return m
}

// Repeat makes m start again from its first turn after the last, instead of failing
// with ErrOutOfTurns; it returns m.
func (m *Model) Repeat() *Model {
	m.mu.Lock()
	m.repeat = true
	m.mu.Unlock()
	return m
}

// Stream implements loop.Model.
func (m *Model) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	key := ""
	if m.perSession {
		key = req.Metadata.SessionID
	}
	i := m.next[key]
	if i >= len(m.turns) && m.repeat && len(m.turns) > 0 {
		i = 0
	}
	if i >= len(m.turns) {
		return nil, &loop.ModelError{Kind: loop.KindInvalidRequest, Message: ErrOutOfTurns.Error()}
	}
	m.next[key] = i + 1
	t := m.turns[i]
	if t.Started != nil {
		select {
		case t.Started <- struct{}{}:
		default:
		}
	}
	if t.Err != nil {
		return nil, t.Err
	}
	ds := t.Deltas
	if ds == nil {
		ds = Deltas(t)
	}
	return &stream{ctx: ctx, deltas: ds, hang: t.Hang}, nil
}

// Requests returns a copy of every request the model received, in order.
func (m *Model) Requests() []loop.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]loop.Request(nil), m.reqs...)
}

// Deltas streams a turn the way providers do: the reasoning, the text in two pieces
// (or in pieces of Chunk runes), each call's arguments in two fragments, then usage (10
// prompt and 5 completion tokens unless set) and the finish. Deltas are numbered from 1.
func Deltas(t Turn) []loop.Delta {
	var ds []loop.Delta
	add := func(d loop.Delta) { d.Seq = len(ds) + 1; ds = append(ds, d) }
	if t.Reasoning != "" {
		add(loop.Delta{Kind: loop.DeltaReasoning, Text: t.Reasoning})
	}
	switch {
	case t.Text == "":
	case t.Chunk > 0:
		for r := []rune(t.Text); len(r) > 0; {
			n := min(t.Chunk, len(r))
			add(loop.Delta{Kind: loop.DeltaText, Text: string(r[:n])})
			r = r[n:]
		}
	default:
		h := len(t.Text) / 2
		add(loop.Delta{Kind: loop.DeltaText, Text: t.Text[:h]})
		add(loop.Delta{Kind: loop.DeltaText, Text: t.Text[h:]})
	}
	for i, c := range t.Calls {
		h := len(c.Arguments) / 2
		add(loop.Delta{Kind: loop.DeltaToolCall, ToolCall: &loop.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments[:h]}})
		add(loop.Delta{Kind: loop.DeltaToolCall, ToolCall: &loop.ToolCallDelta{Index: i, Arguments: c.Arguments[h:]}})
	}
	u := loop.Usage{PromptTokens: 10, CompletionTokens: 5}
	if t.Usage != nil {
		u = *t.Usage
	}
	add(loop.Delta{Kind: loop.DeltaUsage, Usage: &u})
	stop := t.Stop
	if stop == "" {
		stop = string(loop.StopEndTurn)
		if len(t.Calls) > 0 {
			stop = string(loop.StopToolUse)
		}
	}
	add(loop.Delta{Kind: loop.DeltaFinish, StopReason: stop})
	return ds
}

// NewStream returns a loop.Stream that yields deltas, then io.EOF.
func NewStream(deltas ...loop.Delta) loop.Stream {
	return &stream{ctx: context.Background(), deltas: deltas}
}

type stream struct {
	ctx    context.Context
	deltas []loop.Delta
	hang   bool
}

func (s *stream) Recv() (loop.Delta, error) {
	if s.hang {
		<-s.ctx.Done()
		return loop.Delta{}, s.ctx.Err()
	}
	if err := s.ctx.Err(); err != nil {
		return loop.Delta{}, err
	}
	if len(s.deltas) == 0 {
		return loop.Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}

func (s *stream) Close() error { return nil }
