package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agenthost/agenthost/confine"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agenthost/agenthost/loop"
)

// Config is one [[mcp_servers]] entry, its values already checked and expanded.
type Config struct {
	Name      string
	Command   []string          // argv; or URL
	Env       []string          // names of the host variables the command sees; nothing else
	Dir       string            // the command's working directory
	URL       string            // Streamable HTTP endpoint
	Headers   map[string]string // sent with every HTTP request to URL's origin, never to another (headerTransport)
	Tools     []string          // allow list; empty: all
	SkipTools []string
	Timeout   time.Duration // per call; 0: 60s
	// MaxOutput bounds one call's result, in bytes of the text, data and structured
	// content it carries; 0: DefaultMaxOutput. A larger result is refused as an error
	// result, as a plugin's output over max_output is.
	MaxOutput int64
	Version   string // agenthost's, for the MCP handshake
	// Confine, when set, runs Command under Landlock through ConfineExe (the agenthost
	// binary, which handles confine.Subcommand).
	Confine    *confine.Spec
	ConfineExe string
	// Sample, when set, answers the server's sampling requests (sampling.go): req and
	// the result are MCP's CreateMessage params and result, as JSON.
	Sample func(ctx context.Context, req json.RawMessage) (json.RawMessage, error)
	// Elicit lets the server ask the user for input during a call (elicit.go).
	Elicit bool
	// Notify reports a server's progress and log notifications (progress.go), with the
	// context of the call they belong to.
	Notify func(ctx context.Context, method string, params json.RawMessage)
	// Roots are directories the server may work in, announced as MCP roots.
	Roots []string
	// OAuth, for a URL, gets the bearer token with the client credentials grant (oauth.go).
	OAuth *OAuth
	// PerUser, for a URL, reaches the server with each calling user's own token (peruser.go).
	PerUser *PerUser
}

// DefaultMaxOutput is a result's bound when the entry sets none: the sandbox's default
// max_output for plugins (1 MiB), so a tool's result is bounded the same whoever runs it.
// An MCP server is not sandboxed, but what it returns goes into the session, every later
// request to the model and the adapter connection.
const DefaultMaxOutput = 1 << 20

// Tool is one tool a server offers (after the allow and skip lists).
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Server is a connected MCP server.
type Server struct {
	cfg Config

	mu      sync.Mutex
	session *mcp.ClientSession
	dead    chan struct{} // closed when the session's connection ends
	tools   []Tool
	closed  bool

	callMu sync.Mutex         // one call at a time when sampling is on (sampling.go)
	curMu  sync.Mutex         // guards cur
	cur    context.Context    // the call in flight, whose run pays for sampling
	asked  *loop.InputRequest // what that call's server asked the user (elicit.go)
	// inflight are the calls in flight by progress token (progress.go).
	inflight map[string]context.Context
	// users are a per-user server's connections, by user (peruser.go).
	users map[string]*Server
}

// Start connects to the server and lists its tools.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.PerUser != nil {
		return startPerUser(cfg), nil
	}
	s := &Server{cfg: cfg}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var tools []Tool
	var offered []string // every tool the server lists, for an allow list that names another
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("mcp server %q: list tools: %w", cfg.Name, err)
		}
		offered = append(offered, t.Name)
		if (len(cfg.Tools) > 0 && !slices.Contains(cfg.Tools, t.Name)) || slices.Contains(cfg.SkipTools, t.Name) {
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	for _, want := range cfg.Tools {
		if !slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == want }) {
			s.Close()
			return nil, fmt.Errorf("mcp server %q has no tool %q (tools lists it); it offers: %s", cfg.Name, want, offeredList(offered))
		}
	}
	s.tools = tools
	return s, nil
}

// connect starts the command (or opens the HTTP session) and watches its end.
func (s *Server) connect(ctx context.Context) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "agenthost", Version: s.cfg.Version}, s.clientOptions())
	//lint:ignore SA1019 roots are deprecated as of the 2026-07-28 protocol, still served in its deprecation window
	client.AddRoots(s.roots()...)
	var transport mcp.Transport
	switch {
	case len(s.cfg.Command) > 0:
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Dir = s.cfg.Dir
		cmd.Env = []string{}
		for _, name := range s.cfg.Env {
			if v, ok := os.LookupEnv(name); ok {
				cmd.Env = append(cmd.Env, name+"="+v)
			}
		}
		if s.cfg.Confine != nil {
			if err := confine.Wrap(cmd, s.cfg.ConfineExe, *s.cfg.Confine); err != nil {
				return fmt.Errorf("mcp server %q: %w", s.cfg.Name, err)
			}
		}
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case s.cfg.URL != "":
		u, err := url.Parse(s.cfg.URL)
		if err != nil {
			return fmt.Errorf("mcp server %q: url: %w", s.cfg.Name, err)
		}
		rt, err := s.withOAuth(headerTransport{headers: s.cfg.Headers, origin: origin(u), base: http.DefaultTransport}, u)
		if err != nil {
			return err
		}
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: rt}}
	default:
		return fmt.Errorf("mcp server %q: neither command nor url", s.cfg.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return fmt.Errorf("mcp server %q: start: %w", s.cfg.Name, err)
	}
	dead := make(chan struct{})
	go func() { _ = session.Wait(); close(dead) }()
	s.session, s.dead = session, dead
	return nil
}

// headerTransport adds an entry's headers (typically a bearer token) to the requests
// that go to the configured server's origin, and to no other. A RoundTripper sees every
// request the client makes, the hops of a redirect included: one that added the headers
// to all of them would hand the token to whatever host the server (or anyone able to
// make it answer 307) redirects to. Go's client drops its own sensitive headers on a
// redirect to another host, but it cannot know about these.
type headerTransport struct {
	headers map[string]string
	origin  string // scheme://host:port of the configured URL
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 || origin(r.URL) != t.origin {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// origin is a URL's scheme, host and port, lower case, with the scheme's default port
// written out, so that https://H and https://h:443 are one origin.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// Name is the server's manifest name.
func (s *Server) Name() string { return s.cfg.Name }

// Remote reports whether the server is reached by URL rather than run as a command.
func (s *Server) Remote() bool { return s.cfg.URL != "" }

// Tools lists the offered tools.
func (s *Server) Tools() []Tool { return slices.Clone(s.tools) }

// Call calls a tool. A tool's failure is an error result; so is a server that stopped
// during the call (it is started again for the next one) and a call over its timeout.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage) (loop.ToolResult, error) {
	if s.cfg.PerUser != nil {
		return s.callAsUser(ctx, tool, args)
	}
	session, dead, err := s.live(ctx)
	if errors.Is(err, errClosed) {
		return loop.ToolResult{}, err
	}
	if err != nil {
		return failed(err.Error())
	}

	var params map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &params); err != nil {
			return loop.ErrorResult(fmt.Sprintf("Error: arguments for %s are not a JSON object: %v", tool, err)), nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	call := &mcp.CallToolParams{Name: tool, Arguments: params}
	// The caller's trace continues in the server: W3C trace context in the request's
	// _meta, where MCP servers that trace look for it.
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	token, untrack := s.track(ctx)
	defer untrack()
	call.Meta = mcp.Meta{"progressToken": token}
	for k, v := range carrier {
		call.Meta[k] = v
	}
	var res *mcp.CallToolResult
	s.inCall(ctx, func() { res, err = session.CallTool(cctx, call) })
	if asked := s.takeAsked(); asked != nil && ctx.Err() == nil {
		return loop.ToolResult{}, &loop.InputRequiredError{Request: *asked} // the run asks, a later run answers
	}
	switch {
	case err == nil:
		out := toResult(res)
		// The SDK has already read the whole result; refusing it here keeps it out of
		// the session, not out of this process's memory.
		if n := resultSize(out); n > s.cfg.MaxOutput {
			return failed(fmt.Sprintf("mcp server %q: %s: output %s exceeds max_output %s",
				s.cfg.Name, tool, formatSize(n), formatSize(s.cfg.MaxOutput)))
		}
		return out, nil
	case ctx.Err() != nil:
		return loop.ToolResult{}, ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return failed(fmt.Sprintf("mcp server %q: %s timed out after %s", s.cfg.Name, tool, s.cfg.Timeout))
	}
	select {
	case <-dead:
		return failed(fmt.Sprintf("mcp server %q stopped during the call (%v); it is started again for the next call", s.cfg.Name, err))
	case <-time.After(100 * time.Millisecond): // a connection that just broke says so shortly
	}
	select {
	case <-dead:
		return failed(fmt.Sprintf("mcp server %q stopped during the call (%v); it is started again for the next call", s.cfg.Name, err))
	default:
	}
	return failed(fmt.Sprintf("mcp server %q: %v", s.cfg.Name, err))
}

// Failure is a call that did not get the server's answer: the server could not be
// reached or started, stopped during the call, timed out, or answered more than
// max_output. Call returns it beside an error result saying the same, so that the loop
// takes the call as failed (a declared fallback may stand in: docs/loop.md, "Tool
// fallback") rather than as the tool's own error answer (isError), which it is not.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

// failed is Call's result for a Failure with message msg.
func failed(msg string) (loop.ToolResult, error) {
	return loop.ErrorResult("Error: " + msg), &Failure{Msg: msg}
}

func toResult(r *mcp.CallToolResult) loop.ToolResult {
	out := loop.ToolResult{IsError: r.IsError}
	for _, c := range r.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			out.Content = append(out.Content, loop.TextPart(v.Text))
		case *mcp.ImageContent: // media stays media: the loop sniffs, bounds and stores the bytes
			out.Content = append(out.Content, loop.Part{Type: loop.PartImage, Data: v.Data, MimeType: v.MIMEType})
		case *mcp.AudioContent:
			out.Content = append(out.Content, loop.Part{Type: loop.PartAudio, Data: v.Data, MimeType: v.MIMEType})
		case *mcp.EmbeddedResource:
			out.Content = append(out.Content, resourcePart(v.Resource))
		default:
			b, _ := json.Marshal(c)
			out.Content = append(out.Content, loop.TextPart(string(b)))
		}
	}
	if r.StructuredContent != nil {
		out.Structured, _ = json.Marshal(r.StructuredContent)
		if len(out.Content) == 0 {
			out.Content = []loop.Part{loop.TextPart(string(out.Structured))}
		}
	}
	return out
}

// resourcePart is an embedded resource as a part: its blob or its text as a file named
// after its URI (the loop sniffs the type from the bytes).
func resourcePart(r *mcp.ResourceContents) loop.Part {
	if r == nil {
		return loop.TextPart("")
	}
	data := r.Blob
	if data == nil {
		data = []byte(r.Text)
	}
	return loop.Part{Type: loop.PartFile, Data: data, MimeType: r.MIMEType, URL: r.URI, Name: path.Base(r.URI)}
}

// resultSize is what a result would add to the session: its text, its media's bytes and
// image URLs, and its structured content.
func resultSize(r loop.ToolResult) int64 {
	n := int64(len(r.Structured))
	for _, p := range r.Content {
		n += int64(len(p.Text) + len(p.URL) + len(p.Data))
	}
	return n
}

// formatSize writes a byte count as the sandbox does in its max_output error.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Close ends the session (and the command).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.session == nil {
		return s.closeUsers()
	}
	return s.session.Close()
}

// offeredList names a server's tools for an error, sorted, at most 40 of them (a server
// may offer hundreds), or says it offers none.
func offeredList(names []string) string {
	if len(names) == 0 {
		return "no tools"
	}
	names = slices.Sorted(slices.Values(names))
	const most = 40
	if len(names) > most {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return strings.Join(names, ", ")
}
