package mcpserver

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// New returns an MCP server offering h's tools under the names a model sees them by, and
// the prompts and resources of its mcp v2 plugins. A tool whose input schema is not a
// JSON Schema object is left out and named in skipped: MCP requires one, and a plugin's
// describe output is not trusted to have it. When a plugin says its tool list changed
// (notify_tool_list_changed), the list is read again after that call and the clients
// are told (notifications/tools/list_changed). Each call is for the user its request
// names (user.go; opts[0].User otherwise).
func New(h *host.Host, version string, opts ...Options) (srv *mcp.Server, skipped []string) {
	offers := newOffers()
	srv = mcp.NewServer(&mcp.Implementation{Name: "agenthost", Version: version}, serverOptions(h.Plugins(), offers))
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	identify(srv, o.User)
	b := &bridge{h: h, srv: srv, offered: map[string]bool{}, sessions: newSessions(), offers: offers}
	skipped = b.sync()
	skipped = append(skipped, b.addPromptsAndResources(context.Background())...)
	return srv, skipped
}

// bridge keeps the server's tools in step with the host's.
type bridge struct {
	h        *host.Host
	srv      *mcp.Server
	mu       sync.Mutex
	offered  map[string]bool
	sessions *sessions
	offers   *offers // which plugin offers each prompt and resource (complete.go)
}

// sync offers the host's tools that are not offered yet and withdraws the gone ones.
func (b *bridge) sync() (skipped []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := map[string]bool{}
	for _, t := range b.h.ToolList() {
		now[t.Name] = true
		if b.offered[t.Name] {
			continue
		}
		schema, err := objectSchema(t.Spec.InputSchema)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", t.Name, err))
			continue
		}
		b.srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Spec.Description, InputSchema: schema}, b.handler(t))
		b.offered[t.Name] = true
	}
	var gone []string
	for name := range b.offered {
		if !now[name] {
			gone = append(gone, name)
			delete(b.offered, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveTools(gone...)
	}
	return skipped
}

// objectSchema is the tool's schema as MCP wants it: an object schema; none means any
// object.
func objectSchema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{"type": "object"}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("input schema is not a JSON object")
	}
	switch m["type"] {
	case nil:
		m["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("input schema has type %v, not object", m["type"])
	}
	return m, nil
}

// handler runs a client's call through the host's door (host.Door.CallTool, the agent's
// tool pipeline, audited and traced for the caller's principal): the
// guardrails, permission plugins, require_approval, approval_default and caps of a
// model's call, each call stored in the MCP session's own session (mcp-ID), whose id
// also keys the sandbox's instances (isolation "session"), as `serve` keys them by
// thread. A call that needs approval asks the client's user through MCP elicitation
// when the client supports it, and is refused with a clear error when it does not.
func (b *bridge) handler(t host.ToolEntry) mcp.ToolHandler {
	h := b.h
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		session := b.sessions.key(req.Session)
		defer func() {
			// The instance that said its list changed is the session's (isolation "session").
			if changed, _ := h.RefreshTools(sandbox.WithSession(ctx, session)); changed {
				b.sync()
			}
		}()
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta["progressToken"]
		}
		unlock := b.sessions.lock(session) // one call at a time per MCP session: it is one session
		defer unlock()
		fw := &forwarder{ss: req.Session, token: token}
		opts := host.CallOptions{SessionID: session, OnEvent: func(e loop.Event) { fw.forward(ctx, e.Data) },
			Client: clientOf(req.Session)}
		approver, asking := approverFor(req)
		opts.Approver = approver
		res, run := h.Door().CallTool(ctx, principal(ctx, h), t.Name, req.Params.Arguments, opts)
		if asking != nil && asking.params != nil && run.Reason == loop.ReasonApprovalRequired {
			// The user is asked in the protocol's multi round-trip way: the client (or, for
			// an older client, the SDK on its behalf) elicits and calls again with the answer.
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: asking.params}}, nil
		}
		return toMCP(res), nil
	}
}

// metaResultDelta is the _meta key of a progress notification that carries a piece of
// the call's result: the convention agenthost's own MCP client reads
// (mcpclient.MetaResultDelta), so one agenthost serving another streams end to end.
const metaResultDelta = "agenthost/result_delta"

// deltaStep is how far a piece's progress notification moves the call's progress: MCP
// wants progress to rise with each notification, and a piece says nothing of how far
// along the call is, so it moves a client's progress bar by nothing it can see. A call
// has at most 1000 reports, so its pieces add less than 0.001 in all.
const deltaStep = 1.0 / (1 << 20)

// forwarder sends one call's reports to the client session that made it: a plugin's log
// lines, its progress and the pieces of its result the tool streams (tool_result_delta),
// each piece a progress notification carrying its text in _meta[metaResultDelta]. A
// client that sent no progressToken asked for no progress, and gets the result alone.
type forwarder struct {
	ss          *mcp.ServerSession
	token       any
	mu          sync.Mutex // the call's events come in order; a report from a tool's goroutine too
	last, total float64    // the last progress sent and its total
}

func (f *forwarder) forward(ctx context.Context, r any) {
	if f.ss == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch d := r.(type) {
	case *loop.PluginLogData:
		//lint:ignore SA1019 MCP logging is deprecated as of the 2026-07-28 protocol, still served to clients of earlier revisions
		_ = f.ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(d.Level), Logger: d.Plugin, Data: d.Message})
	case *loop.ProgressData:
		f.progress(ctx, &mcp.ProgressNotificationParams{Progress: d.Progress, Total: d.Total, Message: d.Message})
	case *loop.ToolResultDeltaData:
		f.progress(ctx, &mcp.ProgressNotificationParams{Progress: f.last + deltaStep, Total: f.total, Meta: mcp.Meta{metaResultDelta: d.Text}})
	}
}

// progress sends p on the call's token, if the client sent one, and remembers where it
// left the call's progress.
func (f *forwarder) progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if f.token == nil {
		return
	}
	f.last, f.total = p.Progress, p.Total
	p.ProgressToken = f.token
	_ = f.ss.NotifyProgress(ctx, p)
}

// toMCP is a pipeline result as MCP content: text, images (bytes, or a data URL),
// audio, embedded resources (a file part: text when its type is text and it is UTF-8,
// else a blob) and the structured twin.
func toMCP(res loop.ToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{}}
	for _, p := range res.Content {
		out.Content = append(out.Content, mcpContent(p))
	}
	if len(res.Structured) > 0 {
		out.StructuredContent = res.Structured
	}
	return out
}

func mcpContent(p loop.Part) mcp.Content {
	switch p.Type {
	case loop.PartImage:
		if p.Data != nil {
			return &mcp.ImageContent{Data: p.Data, MIMEType: p.MimeType}
		}
		mime, b64, _ := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ";base64,")
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return &mcp.TextContent{Text: "(an image that is not base64)"}
		}
		return &mcp.ImageContent{Data: data, MIMEType: mime}
	case loop.PartAudio:
		return &mcp.AudioContent{Data: p.Data, MIMEType: p.MimeType}
	case loop.PartFile:
		r := &mcp.ResourceContents{URI: cmp.Or(p.URL, "attachment:"+p.Name), MIMEType: p.MimeType}
		if (strings.HasPrefix(p.MimeType, "text/") || p.MimeType == "application/json") && utf8.Valid(p.Data) {
			r.Text = string(p.Data)
		} else {
			r.Blob = p.Data
		}
		return &mcp.EmbeddedResource{Resource: r}
	}
	return &mcp.TextContent{Text: p.Text}
}
