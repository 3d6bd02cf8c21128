//lint:file-ignore SA1019 MCP sampling, roots and logging are deprecated as of the 2026-07-28 protocol but still served in its deprecation window; agenthost supports them for the servers and clients that use them

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// clientOf is what the MCP client of a call answers for its plugins (host.Client): a
// plugin's create_message becomes the client's sampling/createMessage (on a host that runs
// no model) and its create_elicitation the client's elicitation/create, each only when
// the client declared the capability; nil when it declared neither, and for a client of
// the 2026-07-28 revision or later, where a server may not send a request while it
// serves one (those ask through multi round-trip input requests, SEP-2322, which a
// plugin's request in the middle of its call cannot be turned into).
func clientOf(ss *mcp.ServerSession) *host.Client {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil ||
		ss.InitializeParams().ProtocolVersion >= "2026-07-28" {
		return nil
	}
	caps := ss.InitializeParams().Capabilities
	var c host.Client
	if caps.Sampling != nil {
		c.Sample = func(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
			var params mcp.CreateMessageParams
			if err := json.Unmarshal(req, &params); err != nil {
				return nil, fmt.Errorf("the request is not MCP's CreateMessageRequest params: %w", err)
			}
			res, err := ss.CreateMessage(ctx, &params)
			if err != nil {
				return nil, fmt.Errorf("the MCP client's sampling: %w", err)
			}
			return json.Marshal(res)
		}
	}
	if caps.Elicitation != nil {
		c.Elicit = func(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
			var params mcp.ElicitParams
			if err := json.Unmarshal(req, &params); err != nil {
				return nil, fmt.Errorf("the request is not MCP's ElicitRequest params: %w", err)
			}
			res, err := ss.Elicit(ctx, &params)
			if err != nil {
				return nil, fmt.Errorf("the MCP client's elicitation: %w", err)
			}
			return json.Marshal(res)
		}
	}
	if c.Sample == nil && c.Elicit == nil {
		return nil
	}
	return &c
}
