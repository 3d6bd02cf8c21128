package host

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/sandbox"
)

// Client is what the surface's client answers for the plugins of a call it made (the
// MCP client of `mcp serve`): sampling (a plugin's create_message) and elicitation (its
// create_elicitation), each as MCP's request params in and MCP's result out. A nil func
// is a capability the client did not declare.
type Client struct {
	Sample func(ctx context.Context, req json.RawMessage) (json.RawMessage, error)
	Elicit func(ctx context.Context, req json.RawMessage) (json.RawMessage, error)
}

type clientKey struct{}

func withClient(ctx context.Context, c *Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, c)
}

func clientFrom(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

var _ sandbox.Eliciter = (*services)(nil)

// declined is an elicitation no one can answer: the user is not asked.
var declined = json.RawMessage(`{"action":"decline"}`)

// Elicit is a plugin's create_elicitation (sandbox.Eliciter): the calling client asks
// its user when it can (CallOptions.Client); anywhere else (a run, `plugins call`, a
// client without elicitation) the answer is a decline, as MCP lets a client answer.
func (s *services) Elicit(ctx context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
	if c := clientFrom(ctx); c != nil && c.Elicit != nil {
		return c.Elicit(ctx, req)
	}
	return declined, nil
}
