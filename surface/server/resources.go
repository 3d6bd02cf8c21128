package server

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/mcpclient"
)

// Resources lets the console attach an MCP server's resource to the next message: the
// user lists the resources (GET /v1/mcp/resources), picks one, the console reads it (GET
// /v1/mcp/resources/read?server=S&uri=U) and sends what the read answers as more parts of
// its user message. host.(*Host).MCPResources and ReadMCPResource are the two functions.
//
// The read is the user's, not the model's: it needs the user role (a viewer may not run
// anything) but not the agent's tool policy, which governs what the model calls; what is
// read enters the run as the user's own input, through the same POST /v1/runs, input
// guardrails and stored session as typed text. It is bounded by the server's max_output.
type Resources struct {
	List func(ctx context.Context) (map[string][]mcpclient.Resource, error)
	Read func(ctx context.Context, server, uri string) (loop.ToolResult, error)
}

//go:embed web/resources.js
var resourcesJS []byte

// routeResources adds the resource endpoints and the console's script for them.
func (s *Server) routeResources() {
	s.mux.HandleFunc("GET /resources.js", func(w http.ResponseWriter, _ *http.Request) { serveJS(w, resourcesJS) })
	s.mux.Handle("GET /v1/mcp/resources", s.auth(s.atLeast(access.RoleUser, s.handleResourceList)))
	s.mux.Handle("GET /v1/mcp/resources/read", s.auth(s.atLeast(access.RoleUser, s.handleResourceRead)))
}

// handleResourceList answers {"servers": {NAME: [resource…]}}: each MCP server announcing
// resources, with its resources (uri) and templates (uri_template); {} when there are none.
func (s *Server) handleResourceList(w http.ResponseWriter, r *http.Request) {
	servers := map[string][]mcpclient.Resource{}
	if s.opts.Resources != nil {
		var err error
		if servers, err = s.opts.Resources.List(r.Context()); err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers})
}

// handleResourceRead reads one resource and answers {"server", "uri", "parts"}: parts are
// AG-UI content parts ready to go into a user message (attachmentParts).
func (s *Server) handleResourceRead(w http.ResponseWriter, r *http.Request) {
	server, uri := r.URL.Query().Get("server"), r.URL.Query().Get("uri")
	if server == "" || uri == "" {
		writeError(w, http.StatusBadRequest, "server and uri are required")
		return
	}
	if s.opts.Resources == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no MCP server %q with resources", server))
		return
	}
	res, err := s.opts.Resources.Read(r.Context(), server, uri)
	switch {
	case err != nil && r.Context().Err() != nil:
		return // the client left
	case err != nil:
		writeError(w, http.StatusNotFound, err.Error())
		return
	case res.IsError:
		writeError(w, http.StatusBadGateway, strings.TrimPrefix(textOf(res.Content), "Error: "))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": server, "uri": uri, "parts": attachmentParts(server, uri, res.Content)})
}

// contentPart is an AG-UI content part: what a RunAgentInput message's content holds.
type contentPart struct {
	Type   string      `json:"type"`
	Text   string      `json:"text,omitempty"`
	Source *dataSource `json:"source,omitempty"`
}

type dataSource struct {
	Type     string `json:"type"`
	Value    string `json:"value"`
	MimeType string `json:"mimeType"`
}

// attachmentParts turns what a resource read gave into the parts of a user message. The
// text comes as one text part headed by where it is from, so that the model, the stored
// session and whoever reads it later see what was attached, not only its text:
//
//	Attached resource demo://… (MCP server "everything"):
//
//	<the resource's text>
//
// An image comes as an image part (data URL), after a text part naming it the same way.
func attachmentParts(server, uri string, content []loop.Part) []contentPart {
	head := fmt.Sprintf("Attached resource %s (MCP server %q):", validUTF8(uri), validUTF8(server))
	var texts []string
	var images []contentPart
	for _, p := range content {
		switch p.Type {
		case loop.PartImage:
			mime, data, ok := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ";base64,")
			if ok && strings.HasPrefix(p.URL, "data:") {
				images = append(images, contentPart{Type: "image", Source: &dataSource{Type: "data", Value: data, MimeType: mime}})
			}
		default:
			texts = append(texts, p.Text)
		}
	}
	out := []contentPart{{Type: "text", Text: head + "\n\n" + validUTF8(strings.Join(texts, "\n"))}}
	return append(out, images...)
}

func textOf(parts []loop.Part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
