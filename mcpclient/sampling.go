//lint:file-ignore SA1019 MCP sampling, roots and logging are deprecated as of the 2026-07-28 protocol but still served in its deprecation window; agenthost supports them for the servers and clients that use them

package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampling (sampling/createMessage): a server that asks the client's model during a
// tool call. With Config.Sample set the client says it can sample, and a request is
// answered by Sample with the context of the call in flight: the host's one sampling
// path (its door), which passes the request and the answer through the guardrails,
// stores and audits the exchange for the calling run's user, and charges the model call
// to the run that made the tool call (its ledger, its budgets). So that a request
// belongs to exactly one call, a server with sampling has one call in flight at a time;
// a request that arrives outside a call is refused.

// errNoCall refuses a sampling request no tool call can pay for.
var errNoCall = errors.New("sampling is served only during a tool call of this client")

// clientOptions are the SDK client's options: the sampling and elicitation handlers
// when Sample and Elicit are set.
func (s *Server) clientOptions() *mcp.ClientOptions {
	opts := &mcp.ClientOptions{ProgressNotificationHandler: s.onProgress, LoggingMessageHandler: s.onLog}
	if s.cfg.Sample != nil {
		opts.CreateMessageHandler = s.createMessage
	}
	if s.cfg.Elicit {
		opts.ElicitationHandler = s.elicit
	}
	return opts
}

// inCall runs f as the server's one call in flight (when sampling is on), with ctx as
// the context its sampling requests are answered in.
func (s *Server) inCall(ctx context.Context, f func()) {
	if s.cfg.Sample == nil && !s.cfg.Elicit {
		f()
		return
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	s.curMu.Lock()
	s.cur = ctx
	s.curMu.Unlock()
	defer func() { s.curMu.Lock(); s.cur = nil; s.curMu.Unlock() }()
	f()
}

func (s *Server) createMessage(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.curMu.Lock()
	ctx := s.cur
	s.curMu.Unlock()
	if ctx == nil {
		return nil, fmt.Errorf("mcp server %q: %w", s.cfg.Name, errNoCall)
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	out, err := s.cfg.Sample(ctx, params)
	if err != nil {
		return nil, err
	}
	var r struct {
		Model      string `json:"model"`
		StopReason string `json:"stopReason"`
		Content    struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("sampling result: %w", err)
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: r.Model, StopReason: r.StopReason, Content: &mcp.TextContent{Text: r.Content.Text}}, nil
}
