package mcpclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/loop"
)

// Resources and prompts: what a server offers besides tools. The host gives the agent
// its resources through built-in tools (host/mcpresources.go) and a prompt as the
// messages of a run (run --prompt SERVER/NAME).

// Resource is a resource, or a resource template (URITemplate set), a server lists.
type Resource struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// maxListed bounds a listing: a server's list is paged, and a hostile one never ends.
const maxListed = 1000

// errClosed is live's error for a server that was closed (not one that died).
var errClosed = errors.New("closed")

// live returns the session and the channel closed when its connection ends, starting
// the server again when it died since the last use.
func (s *Server) live(ctx context.Context) (*mcp.ClientSession, chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, fmt.Errorf("mcp server %q is %w", s.cfg.Name, errClosed)
	}
	select {
	case <-s.dead: // crashed since the last call: start it again
		if err := s.connect(ctx); err != nil {
			return nil, nil, err
		}
	default:
	}
	return s.session, s.dead, nil
}

// HasResources says the server announced resources.
func (s *Server) HasResources() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil { // a per-user server's connections are its users'
		return false
	}
	r := s.session.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Resources != nil
}

// HasPrompts says the server announced prompts.
func (s *Server) HasPrompts() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil { // a per-user server's connections are its users'
		return false
	}
	r := s.session.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Prompts != nil
}

// ListResources lists the server's resources and resource templates (at most 1,000).
func (s *Server) ListResources(ctx context.Context) ([]Resource, error) {
	session, _, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var out []Resource
	for r, err := range session.Resources(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: list resources: %w", s.cfg.Name, err)
		}
		if out = append(out, Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}); len(out) >= maxListed {
			return out, nil
		}
	}
	for r, err := range session.ResourceTemplates(ctx, nil) {
		if err != nil {
			break // templates are optional: a server without them may answer with an error
		}
		if out = append(out, Resource{URITemplate: r.URITemplate, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}); len(out) >= maxListed {
			break
		}
	}
	return out, nil
}

// ReadResource reads a resource as a tool result: text as text, an image as an image,
// other binary content described, the whole bounded by max_output.
func (s *Server) ReadResource(ctx context.Context, uri string) (loop.ToolResult, error) {
	session, _, err := s.live(ctx)
	if err != nil {
		return loop.ErrorResult("Error: " + err.Error()), nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := session.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		if ctx.Err() != nil {
			return loop.ToolResult{}, ctx.Err()
		}
		return loop.ErrorResult(fmt.Sprintf("Error: mcp server %q: read %s: %v", s.cfg.Name, uri, err)), nil
	}
	var out loop.ToolResult
	for _, c := range res.Contents {
		switch {
		case c.Blob != nil: // kept as a part: the loop sniffs, bounds and stores the bytes
			out.Content = append(out.Content, resourcePart(c))
		default:
			out.Content = append(out.Content, loop.TextPart(c.Text))
		}
	}
	if n := resultSize(out); n > s.cfg.MaxOutput {
		return loop.ErrorResult(fmt.Sprintf("Error: mcp server %q: resource %s: %s exceeds max_output %s", s.cfg.Name, uri, formatSize(n), formatSize(s.cfg.MaxOutput))), nil
	}
	if len(out.Content) == 0 {
		out.Content = []loop.Part{loop.TextPart("")}
	}
	return out, nil
}

// GetPrompt renders one of the server's prompts into messages (text content; other
// content is described).
func (s *Server) GetPrompt(ctx context.Context, name string, args map[string]string) ([]loop.Message, error) {
	session, _, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: prompt %q: %w", s.cfg.Name, name, err)
	}
	var out []loop.Message
	for _, m := range res.Messages {
		text := ""
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			text = c.Text
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				text = c.Resource.Text
			}
		default:
			text = fmt.Sprintf("(%T content, not shown)", c)
		}
		role := loop.RoleUser
		if m.Role == "assistant" {
			role = loop.RoleAssistant
		}
		out = append(out, loop.Message{Role: role, Content: []loop.Part{loop.TextPart(text)}})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcp server %q: prompt %q has no messages", s.cfg.Name, name)
	}
	return out, nil
}
