package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A fallback chain (agent.provider = ["anthropic", "openai"]) is one loop.Model over
// several providers. For each model call it tries them in order:
//
//   - a provider whose circuit is open is skipped (breaker.go);
//   - a call waits for the provider's rate limits (ratelimit.go) instead of drawing 429s;
//   - a retryable failure (rate limit, overload, transport) is retried on the same
//     provider with the agent's retry policy; a non-retryable one, or the last retry's,
//     moves the call to the next provider, and an error event says which and why;
//   - a failure counts against the provider's breaker only once the stream is known
//     to have failed: before its first event, or mid-stream.
//
// Once the first event of a call has reached the loop the call belongs to that provider:
// a failure after it goes to the loop like any model error. When every provider has
// failed, the last error is returned as not retryable, because the retries have been
// spent here already: the loop must not multiply them. A chain of one provider behaves
// exactly as that provider does (the loop retries), with its rate limits and breaker.
type chainModel struct {
	links []*link
	retry loop.RetryPolicy // MaxAttempts etc. as the agent has them (withRetryDefaults)
	sleep func(ctx context.Context, d time.Duration) error
}

// link is one provider of a chain.
type link struct {
	name    string
	model   loop.Model
	pricing *loop.Pricing // the provider's own prices, if the manifest sets them
	breaker *breaker
	limits  *limiter
}

func withRetryDefaults(p loop.RetryPolicy) loop.RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func (c *chainModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	var last error
	tried := 0
	for i, l := range c.links {
		if !l.breaker.allow(ctx) {
			continue
		}
		tried++
		st, err := c.tryLink(ctx, l, req)
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		last = err
		if len(c.links) == 1 {
			return nil, err // the loop's own retries apply
		}
		if next := c.nextOpen(i); next != "" {
			loop.Notify(ctx, loop.ErrorData{Kind: "provider_fallback",
				Message: fmt.Sprintf("provider %s failed (%v); the call goes to %s", l.name, err, next)})
		}
	}
	if tried == 0 {
		wait := c.links[0].breaker.remaining()
		for _, l := range c.links[1:] {
			wait = min(wait, l.breaker.remaining())
		}
		return nil, &loop.ModelError{Kind: loop.KindOverloaded, Retryable: true, RetryAfter: wait,
			Message: "every provider's circuit is open"}
	}
	if len(c.links) > 1 {
		var me *loop.ModelError
		if errors.As(last, &me) {
			out := *me
			out.Retryable = false
			out.Message = "every provider failed; the last: " + me.Message
			return nil, &out
		}
		return nil, fmt.Errorf("every provider failed; the last: %w", last)
	}
	return nil, last
}

// nextOpen names the next provider after i that will be tried, or "".
func (c *chainModel) nextOpen(i int) string {
	for _, l := range c.links[i+1:] {
		if l.breaker.wouldAllow() {
			return l.name
		}
	}
	return ""
}

// tryLink calls one provider, retrying retryable failures when it is part of a chain,
// and returns a stream whose first event has been read already.
func (c *chainModel) tryLink(ctx context.Context, l *link, req loop.Request) (loop.Stream, error) {
	attempts := 1
	if len(c.links) > 1 {
		attempts = c.retry.MaxAttempts
	}
	estimate := estimateTokens(req)
	var err error
	for attempt := 1; attempt <= attempts; attempt++ {
		if err = l.limits.wait(ctx, estimate); err != nil {
			return nil, err
		}
		var st loop.Stream
		st, err = l.model.Stream(ctx, req)
		var first loop.Delta
		if err == nil {
			first, err = st.Recv()
			if err == io.EOF {
				err = &loop.ModelError{Kind: loop.KindProvider, Retryable: true, Message: "the stream ended before any event"}
			}
			if err != nil {
				st.Close()
			}
		}
		if err == nil {
			return &linkStream{Stream: st, link: l, first: &first, chain: len(c.links) > 1, estimate: estimate, ctx: ctx}, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		l.breaker.failure(ctx, err)
		var me *loop.ModelError
		if !errors.As(err, &me) || !me.Retryable || attempt == attempts || l.breaker.isOpen() {
			return nil, err
		}
		delay := min(c.retry.BaseDelay<<(attempt-1), c.retry.MaxDelay)
		if me.RetryAfter > 0 {
			delay = me.RetryAfter
		}
		loop.Notify(ctx, loop.ErrorData{Kind: string(me.Kind), Retryable: true,
			Message: fmt.Sprintf("provider %s: %s (retrying in %s)", l.name, me.Message, delay)})
		if err := c.sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
	return nil, err
}

// linkStream is a provider's stream inside a chain: it replays the event read ahead,
// names the provider and prices its usage, and tells the breaker how the call ended.
type linkStream struct {
	loop.Stream
	ctx      context.Context
	link     *link
	first    *loop.Delta
	chain    bool
	estimate int
	done     bool
	usage    bool        // a usage delta went by
	held     *loop.Delta // the finish, held back behind the usage this stream never sent
}

func (s *linkStream) Recv() (loop.Delta, error) {
	var d loop.Delta
	var err error
	switch {
	case s.held != nil:
		d, s.held = *s.held, nil
		return d, nil
	case s.first != nil:
		d, s.first = *s.first, nil
	default:
		d, err = s.Stream.Recv()
	}
	if err == nil && d.Kind == loop.DeltaFinish && !s.usage && s.chain {
		// Name the provider in the call's usage event even when it reported no usage.
		s.held = &d
		d = loop.Delta{Kind: loop.DeltaUsage, Usage: &loop.Usage{}}
	}
	switch {
	case err == io.EOF:
		s.end(nil)
	case err != nil:
		s.end(err)
	case d.Kind == loop.DeltaUsage && d.Usage != nil:
		s.usage = true
		u := *d.Usage
		if s.chain {
			u.Provider = s.link.name
		}
		if u.CostUSD == 0 && s.link.pricing != nil {
			u.CostUSD = s.link.pricing.Cost(u)
		}
		s.link.limits.account(u.PromptTokens+u.CompletionTokens, s.estimate)
		d.Usage = &u
	}
	return d, err
}

func (s *linkStream) end(err error) {
	if s.done {
		return
	}
	s.done = true
	if err != nil {
		if s.ctx.Err() == nil {
			s.link.breaker.failure(s.ctx, err)
		}
		return
	}
	s.link.breaker.success(s.ctx)
}

// estimateTokens is a request's size in tokens, roughly (4 bytes a token), for the
// tokens-per-minute limit before the provider reports the real count.
func estimateTokens(req loop.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Reasoning) + len(m.Name)
		for _, p := range m.Content {
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n/4 + 1
}
