package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/loop"
)

// The GenAI semantic conventions' attribute names.
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrProvider     = attribute.Key("gen_ai.provider.name")
	attrAgentName    = attribute.Key("gen_ai.agent.name")
	attrConversation = attribute.Key("gen_ai.conversation.id")
	attrRequestModel = attribute.Key("gen_ai.request.model")
	attrMaxTokens    = attribute.Key("gen_ai.request.max_tokens")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrFinish       = attribute.Key("gen_ai.response.finish_reasons")
	attrToolName     = attribute.Key("gen_ai.tool.name")
	attrToolCallID   = attribute.Key("gen_ai.tool.call.id")
	attrToolArgs     = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult   = attribute.Key("gen_ai.tool.call.result")
	attrInput        = attribute.Key("gen_ai.input.messages")
	attrOutput       = attribute.Key("gen_ai.output.messages")
	attrErrorType    = attribute.Key("error.type")
	attrPlugin       = attribute.Key("agenthost.plugin")
	attrRunID        = attribute.Key("agenthost.run.id")
	attrStatus       = attribute.Key("agenthost.run.status")
	attrReason       = attribute.Key("agenthost.run.reason")
	attrCost         = attribute.Key("agenthost.usage.cost_usd")
	attrCallIndex    = attribute.Key("agenthost.call_index")
)

// runState is what a traced run's spans share: the chat span of each model call, kept
// open across the loop's retries of that call.
type runState struct {
	mu    sync.Mutex
	chats map[int]*chatSpan
}

type runKey struct{}

// StartRun starts a run's invoke_agent span (a child of ctx's span, for instance one
// continued from an incoming traceparent) and puts the Telemetry and the span on the
// context the run must use. It sets in.TraceID when the run has a trace: its spans are
// exported, or it continues a caller's (traceparent) even if this process exports none. end records how
// the run ended, in the span and in the metrics.
func (t *Telemetry) StartRun(ctx context.Context, agent string, in *loop.RunInput) (context.Context, func(loop.RunResult)) {
	if t == nil {
		return ctx, func(loop.RunResult) {}
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrOperation.String("invoke_agent"), attrAgentName.String(agent)))
	if sc := span.SpanContext(); sc.IsValid() { // exported, or a caller's trace we continue
		in.TraceID = sc.TraceID().String()
	}
	st := &runState{chats: map[int]*chatSpan{}}
	ctx = context.WithValue(context.WithValue(ctx, telKey{}, t), runKey{}, st)
	return ctx, func(res loop.RunResult) {
		st.mu.Lock()
		for _, c := range st.chats { // calls the loop gave up on
			c.span.SetStatus(codes.Error, "the model call failed")
			c.span.End()
		}
		st.chats = nil
		st.mu.Unlock()
		span.SetAttributes(attrConversation.String(res.SessionID), attrRunID.String(res.RunID), // the loop names new ones
			attrStatus.String(string(res.Status)), attrReason.String(string(res.Reason)),
			attrInputTokens.Int(res.Usage.PromptTokens), attrOutputTokens.Int(res.Usage.CompletionTokens),
			attrCost.Float64(res.Usage.CostUSD))
		if res.Status == loop.StatusFailed {
			span.SetAttributes(attrErrorType.String(string(res.Reason)))
			msg := string(res.Reason)
			if res.Err != nil && t.capture {
				msg = t.content(res.Err.Error())
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End()
		t.m.run(ctx, res, time.Since(start))
	}
}

// Observe feeds the run's events to the metrics that events tell best: tokens and cost
// per call, retries.
func (t *Telemetry) Observe(ctx context.Context, e loop.Event) {
	if t == nil {
		return
	}
	switch d := e.Data.(type) {
	case *loop.Usage:
		t.m.usage(ctx, *d)
	case *loop.ErrorData:
		if d.Retryable {
			t.m.retries.Add(ctx, 1)
		}
	}
}

// Feedback counts feedback on a run (agenthost_feedback_total{agent,score}) and, when
// tracing, records it as an event on a span of its own linked to nothing: the run's span
// has ended long before people say what they think of it.
func (t *Telemetry) Feedback(ctx context.Context, f loop.Feedback) {
	if t == nil {
		return
	}
	t.m.feedback.Add(ctx, 1, metric.WithAttributes(attribute.String("agent", f.Agent), attribute.String("score", strconv.Itoa(f.Score))))
	if !t.Tracing() {
		return
	}
	_, end := t.Span(ctx, "agenthost.feedback", attribute.String("gen_ai.conversation.id", f.SessionID),
		attribute.String("agenthost.run.id", f.RunID), attribute.Int("agenthost.feedback.score", f.Score))
	end(nil)
}

// Span starts a span for work that is not a model or tool call (a hook, a guardrail, a
// plugin load) as a child of ctx's. end records err, if any, as the span's error.
func (t *Telemetry) Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			kind := errorType(err)
			span.SetAttributes(attrErrorType.String(kind))
			span.SetStatus(codes.Error, t.errorText(err.Error(), kind))
		}
		span.End()
	}
}

// errorText is a failed span's status description: the failure's own text only with
// CaptureContent. A tool's error result is its output, a tool's or a plugin's error can
// quote what it failed on (a guardrail says what it blocked, a guest's error_set text is
// anything), and a run's error can be either: without CaptureContent the description is
// the kind of failure, which error.type records too, and the text stays in the session.
func (t *Telemetry) errorText(text, kind string) string {
	if t.capture {
		return t.content(text)
	}
	return kind
}

// HookSpan is Span for a plugin hook of the run ctx belongs to; a no-op outside one.
func HookSpan(ctx context.Context, kind, plugin, export string) (context.Context, func(error)) {
	return FromContext(ctx).Span(ctx, kind+" "+plugin, attrPlugin.String(plugin),
		attribute.String("agenthost.plugin.export", export), attrOperation.String(kind))
}

// ToolSpan starts the execute_tool span of a tool call of the run ctx belongs to; end
// records the result. A no-op outside a traced run.
func ToolSpan(ctx context.Context, tool, plugin, args string) (context.Context, func(loop.ToolResult, error)) {
	t := FromContext(ctx)
	if t == nil {
		return ctx, func(loop.ToolResult, error) {}
	}
	start := time.Now()
	info, _ := loop.CallInfoFrom(ctx)
	ctx, span := t.tracer.Start(ctx, "execute_tool "+tool, trace.WithAttributes(attrOperation.String("execute_tool"),
		attrToolName.String(tool), attrToolCallID.String(info.CallID), attrPlugin.String(plugin)))
	if t.capture {
		span.SetAttributes(attrToolArgs.String(t.content(args)))
	}
	return ctx, func(res loop.ToolResult, err error) {
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "error"
			kind := errorType(err)
			span.SetAttributes(attrErrorType.String(kind))
			span.SetStatus(codes.Error, t.errorText(err.Error(), kind))
		case res.IsError:
			outcome = "error"
			span.SetAttributes(attrErrorType.String("tool_error"))
			span.SetStatus(codes.Error, t.errorText(firstLine(res.Text()), "tool_error"))
		}
		if t.capture {
			span.SetAttributes(attrToolResult.String(t.content(res.Text())))
		}
		span.End()
		timedOut := errors.Is(err, context.DeadlineExceeded) || (res.IsError && strings.Contains(res.Text(), "timed out"))
		t.m.tool(ctx, plugin, tool, outcome, timedOut, time.Since(start))
	}
}

// chatSpan is one model call's chat span, across the loop's attempts.
type chatSpan struct {
	span     trace.Span
	attempts int
}

// WrapModel traces every call of m made within a traced run: one chat span per model
// call (the loop's retries of a call are events of its span), time to first token,
// token usage and stop reason.
func WrapModel(m loop.Model, provider, model string) loop.Model {
	return &tracedModel{Model: m, provider: provider, model: model}
}

type tracedModel struct {
	loop.Model
	provider, model string
}

func (m *tracedModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	t := FromContext(ctx)
	st, _ := ctx.Value(runKey{}).(*runState)
	if t == nil || st == nil {
		return m.Model.Stream(ctx, req)
	}
	model := req.Model
	if model == "" {
		model = m.model
	}
	ci := req.Metadata.CallIndex
	st.mu.Lock()
	cs := st.chats[ci]
	if cs == nil {
		attrs := []attribute.KeyValue{attrOperation.String("chat"), attrProvider.String(m.provider),
			attrRequestModel.String(model), attrCallIndex.Int(ci)}
		if req.MaxTokens > 0 { // 0 is "no limit set", which is no max_tokens, not a limit of 0
			attrs = append(attrs, attrMaxTokens.Int(req.MaxTokens))
		}
		_, span := t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if t.capture {
			b, _ := json.Marshal(req.Messages)
			span.SetAttributes(attrInput.String(t.content(string(b))))
		}
		cs = &chatSpan{span: span}
		st.chats[ci] = cs
	}
	cs.attempts++
	st.mu.Unlock()
	start := time.Now()
	s, err := m.Model.Stream(trace.ContextWithSpan(ctx, cs.span), req) // the provider's calls are the chat span's children
	if err != nil {
		m.failed(ctx, t, cs, err)
		return nil, err
	}
	return &tracedStream{Stream: s, ctx: ctx, t: t, m: m, st: st, cs: cs, ci: ci, start: start}, nil
}

// failed records a failed attempt: an event of the call's span (the loop may retry).
func (m *tracedModel) failed(ctx context.Context, t *Telemetry, cs *chatSpan, err error) {
	cs.span.AddEvent("gen_ai.retry", trace.WithAttributes(attribute.Int("attempt", cs.attempts),
		attrErrorType.String(errorType(err)), attribute.String("error.message", t.content(err.Error()))))
	t.m.modelCall(ctx, m.provider, "error", strings.Contains(strings.ToLower(err.Error()), "timeout") ||
		strings.Contains(err.Error(), "timed out"))
}

type tracedStream struct {
	loop.Stream
	ctx   context.Context
	t     *Telemetry
	m     *tracedModel
	st    *runState
	cs    *chatSpan
	ci    int
	start time.Time
	first bool
	text  strings.Builder
	done  bool
}

func (s *tracedStream) Recv() (loop.Delta, error) {
	d, err := s.Stream.Recv()
	if s.done {
		return d, err
	}
	span := s.cs.span
	switch {
	case err == io.EOF:
		s.done = true
		if s.t.capture {
			span.SetAttributes(attrOutput.String(s.t.content(s.text.String())))
		}
		span.End()
		s.st.mu.Lock()
		delete(s.st.chats, s.ci)
		s.st.mu.Unlock()
		s.t.m.modelCall(s.ctx, s.m.provider, "ok", false)
		s.t.m.modelDuration.Record(s.ctx, time.Since(s.start).Seconds())
		return d, err
	case err != nil:
		s.done = true
		s.m.failed(s.ctx, s.t, s.cs, err)
		return d, err
	}
	if !s.first {
		s.first = true
		s.t.m.ttft.Record(s.ctx, time.Since(s.start).Seconds())
	}
	switch d.Kind {
	case loop.DeltaText:
		if s.t.capture {
			s.text.WriteString(d.Text)
		}
	case loop.DeltaUsage:
		if d.Usage != nil {
			span.SetAttributes(attrInputTokens.Int(d.Usage.PromptTokens), attrOutputTokens.Int(d.Usage.CompletionTokens))
			if d.Usage.Provider != "" {
				span.SetAttributes(attribute.String("agenthost.provider.served", d.Usage.Provider))
			}
		}
	case loop.DeltaFinish:
		span.SetAttributes(attrFinish.StringSlice([]string{d.StopReason}))
	}
	return d, err
}

// errorType is the error.type of err: a model error's kind, else a short class.
func errorType(err error) string {
	var me *loop.ModelError
	switch {
	case errors.As(err, &me):
		return string(me.Kind)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
