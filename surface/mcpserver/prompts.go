package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/sandbox"
)

// addPromptsAndResources offers the prompts, resources and resource templates of the
// host's mcp v2 plugins, each served by the plugin (in the sandbox) when a client asks.
// A plugin whose lists cannot be read is named in skipped and offers none.
func (b *bridge) addPromptsAndResources(ctx context.Context) (skipped []string) {
	for _, p := range b.h.Plugins() {
		if p.ABI() != sandbox.ABIMCP {
			continue
		}
		if p.HasExport("list_prompts") && p.HasExport("get_prompt") {
			var list mcp.ListPromptsResult
			if err := request(ctx, p, "list_prompts", nil, &list); err != nil {
				skipped = append(skipped, err.Error())
			}
			for _, pr := range list.Prompts {
				err := guarded(p.Name(), "prompt", func() {
					b.srv.AddPrompt(pr, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
						var out mcp.GetPromptResult
						params, _ := json.Marshal(req.Params)
						return &out, request(ctx, p, "get_prompt", params, &out)
					})
				})
				if err != nil {
					skipped = append(skipped, err.Error())
					continue
				}
				b.offers.prompts[pr.Name] = p
			}
		}
		if !p.HasExport("read_resource") {
			continue
		}
		read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			var out mcp.ReadResourceResult
			params, _ := json.Marshal(req.Params)
			return &out, request(ctx, p, "read_resource", params, &out)
		}
		if p.HasExport("list_resources") {
			var list mcp.ListResourcesResult
			if err := request(ctx, p, "list_resources", nil, &list); err != nil {
				skipped = append(skipped, err.Error())
			}
			for _, r := range list.Resources {
				if err := guarded(p.Name(), "resource", func() { b.srv.AddResource(r, read) }); err != nil {
					skipped = append(skipped, err.Error())
					continue
				}
				b.offers.resources[r.URI] = p
			}
		}
		if p.HasExport("list_resource_templates") {
			var list mcp.ListResourceTemplatesResult
			if err := request(ctx, p, "list_resource_templates", nil, &list); err != nil {
				skipped = append(skipped, err.Error())
			}
			for _, rt := range list.ResourceTemplates {
				if err := guarded(p.Name(), "resource template", func() { b.srv.AddResourceTemplate(rt, read) }); err != nil {
					skipped = append(skipped, err.Error())
					continue
				}
				b.offers.templates[rt.URITemplate] = p
			}
		}
	}
	return skipped
}

// request makes one v2 request of a plugin and decodes its answer.
func request(ctx context.Context, p *sandbox.Plugin, export string, params json.RawMessage, out any) error {
	raw, err := p.MCPRequest(ctx, export, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("plugin %q: %s: %w", p.Name(), export, err)
	}
	return nil
}

// guarded runs an Add of the SDK, which panics on what it finds invalid (a bad URI
// template, say), and turns the panic into an error: a plugin's lists are not trusted.
func guarded(plugin, what string, add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plugin %q: a %s not offered: %v", plugin, what, r)
		}
	}()
	add()
	return nil
}
