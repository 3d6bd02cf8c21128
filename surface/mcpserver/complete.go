package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/sandbox"
)

// offers says which mcp v2 plugin serves each prompt (by name) and each resource and
// resource template (by URI or URI template): completion/complete asks that plugin, and
// resources/subscribe accepts only what some plugin offers.
type offers struct {
	prompts, resources, templates map[string]*sandbox.Plugin
}

func newOffers() *offers {
	return &offers{prompts: map[string]*sandbox.Plugin{}, resources: map[string]*sandbox.Plugin{}, templates: map[string]*sandbox.Plugin{}}
}

// serverOptions are the SDK options of the host's plugins: a completion handler when a
// v2 plugin exports complete, subscriptions when one serves resources. The SDK declares
// the capabilities from what is set.
func serverOptions(plugins []*sandbox.Plugin, o *offers) *mcp.ServerOptions {
	opts := &mcp.ServerOptions{}
	for _, p := range plugins {
		if p.ABI() != sandbox.ABIMCP {
			continue
		}
		if p.HasExport("complete") {
			opts.CompletionHandler = o.complete
		}
		if p.HasExport("read_resource") {
			opts.SubscribeHandler, opts.UnsubscribeHandler = o.subscribe, o.unsubscribe
		}
	}
	return opts
}

// complete answers completion/complete for a prompt's or a resource template's
// argument by asking the plugin that offers it (its complete export, with MCP's
// CompleteParams); a plugin without that export completes nothing. A reference
// to something no plugin offers is an invalid-params error.
func (o *offers) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	var p *sandbox.Plugin
	switch req.Params.Ref.Type {
	case "ref/prompt":
		p = o.prompts[req.Params.Ref.Name]
	case "ref/resource":
		if p = o.templates[req.Params.Ref.URI]; p == nil {
			p = o.resources[req.Params.Ref.URI]
		}
	}
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("no %s %q is offered", req.Params.Ref.Type, req.Params.Ref.Name+req.Params.Ref.URI)}
	}
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if !p.HasExport("complete") {
		return out, nil
	}
	params, _ := json.Marshal(req.Params)
	if err := request(ctx, p, "complete", params, out); err != nil {
		return nil, err
	}
	if out.Completion.Values == nil {
		out.Completion.Values = []string{}
	}
	if len(out.Completion.Values) > 100 { // MCP's bound on one answer
		out.Completion.Values, out.Completion.HasMore = out.Completion.Values[:100], true
	}
	return out, nil
}

// subscribe accepts a subscription to a resource a plugin offers (the SDK keeps the
// subscriptions and sends resources/updated to them, ResourceUpdated).
func (o *offers) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if req.Params == nil || o.resources[req.Params.URI] == nil {
		return mcp.ResourceNotFoundError(uriOf(req.Params))
	}
	return nil
}

func (o *offers) unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

func uriOf(p *mcp.SubscribeParams) string {
	if p == nil {
		return ""
	}
	return p.URI
}
