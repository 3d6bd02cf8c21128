package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// samplingRequest is the part of MCP's CreateMessageRequest params the host uses.
type samplingRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
	SystemPrompt string `json:"systemPrompt"`
	MaxTokens    int    `json:"maxTokens"`
}

// errSampleNoModel refuses a sampling on a host without a provider.
var errSampleNoModel = errors.New("no model is running")

// CreateMessage is a plugin's create_message (sandbox.Host): Door.Sample, or, on a host
// that runs no model (`mcp serve` without --agent), the sampling of the client that made
// the call (CallOptions.Client) when it offers one.
func (s *services) CreateMessage(ctx context.Context, plugin string, req json.RawMessage) (json.RawMessage, error) {
	if c := clientFrom(ctx); s.noModel && c != nil && c.Sample != nil {
		return c.Sample(ctx, req)
	}
	if s.sample == nil {
		return nil, fmt.Errorf("create_message: %w", errSampleNoModel)
	}
	return s.sample(ctx, "plugin:"+plugin, req)
}

type genKey struct{}

// withGeneration puts the generation a door entry holds on its context, so that what
// the entry calls back into (a sampling) uses the same agent and plugin set.
func withGeneration(ctx context.Context, g *generation) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, genKey{}, g)
}

// Sample is the door for a model call that no run's model made: a plugin's
// create_message (caller "plugin:NAME") and an MCP server's sampling request ("mcp:NAME"),
// with req and the answer as MCP's CreateMessageRequest params and CreateMessageResult.
// It goes through the loop's model-call path (loop.Agent.Sample): the request's
// messages pass the input guardrails and the answer the output guardrails (a block is
// the returned error), no tools are offered, and the call is a run nested in the calling
// run — its ledger admits and is charged for it — on a session of its own, claimed for
// the calling run's user, which stores the messages and the answer. Like every entry it
// is audited (run_start and run_end naming the principal and the caller) and traced (an
// invoke_agent span with enduser.id). The principal is the calling run's (on ctx), else
// the local user. A sampling inside a sampling is bounded (loop.MaxSampleDepth).
func (d *Door) Sample(ctx context.Context, caller string, req json.RawMessage) (json.RawMessage, error) {
	out, err := d.sample(ctx, caller, req)
	if err != nil {
		return nil, fmt.Errorf("sampling for %s: %w", caller, err)
	}
	return out, nil
}

func (d *Door) sample(ctx context.Context, caller string, req json.RawMessage) (json.RawMessage, error) {
	h := d.h
	g, _ := ctx.Value(genKey{}).(*generation)
	if g == nil {
		if g = h.live.hold(); g == nil {
			return nil, errSampleNoModel
		}
		defer h.live.release(g)
	}
	var sr samplingRequest
	if err := json.Unmarshal(req, &sr); err != nil {
		return nil, fmt.Errorf("the request: %w", err)
	}
	msgs, err := samplingMessages(sr)
	if err != nil {
		return nil, err
	}
	info, _ := loop.CallInfoFrom(ctx)
	p := h.principalOf(ctx, info.User)
	in := loop.RunInput{User: info.User}
	newIDs(&in)
	if err := d.admit(ctx, p, &in); err != nil {
		return nil, err
	}
	ctx = access.WithPrincipal(ctx, p)
	agent := h.Manifest.Agent.Name
	ctx, end := h.tel.StartRun(ctx, agent, &in)
	detail := map[string]string{"agent": agent, "sampling": caller}
	if info.SessionID != "" {
		detail["calling_session"], detail["calling_run"] = info.SessionID, info.RunID
	}
	ended, err := h.auditRun(ctx, p, &in, detail)
	if err != nil {
		res, err := failedRun(in, err)
		end(res)
		return nil, err
	}
	markSpan(ctx, p)
	out, res, err := g.agent.Sample(ctx, loop.SampleInput{SessionID: in.SessionID, RunID: in.RunID, Messages: msgs,
		MaxTokens: sr.MaxTokens, Caller: caller, TraceID: in.TraceID, User: in.User}, d.observe(ctx, nil))
	end(res)
	ended(res)
	if err != nil {
		return nil, err
	}
	stop := "endTurn"
	if out.Stop == loop.StopMaxTokens {
		stop = "maxTokens"
	}
	return json.Marshal(map[string]any{"role": "assistant", "model": out.Model, "stopReason": stop,
		"content": map[string]string{"type": "text", "text": out.Text}})
}

// samplingMessages are the loop's messages of a sampling request: its system prompt
// first, then its messages (user or assistant, text).
func samplingMessages(sr samplingRequest) ([]loop.Message, error) {
	var msgs []loop.Message
	if sr.SystemPrompt != "" {
		msgs = append(msgs, loop.Message{Role: loop.RoleSystem, Content: []loop.Part{loop.TextPart(sr.SystemPrompt)}})
	}
	for i, m := range sr.Messages {
		role := loop.Role(m.Role)
		if role != loop.RoleUser && role != loop.RoleAssistant {
			return nil, fmt.Errorf("message %d: role %q (user or assistant)", i, m.Role)
		}
		if m.Content.Text == "" {
			return nil, fmt.Errorf("message %d has no text", i)
		}
		msgs = append(msgs, loop.Message{Role: role, Content: []loop.Part{loop.TextPart(m.Content.Text)}})
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role == loop.RoleSystem {
		return nil, errors.New("the request has no messages")
	}
	return msgs, nil
}
