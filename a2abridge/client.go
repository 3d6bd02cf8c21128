package a2abridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/agenthost/agenthost/loop"
)

// Remote is one [[a2a_agents]] entry: a remote A2A agent the agent may call as a tool.
type Remote struct {
	Name        string
	URL         string        // the agent's JSON-RPC endpoint (agenthost serves /a2a)
	Token       string        // sent as a bearer token ("" for none)
	Description string        // what the model is told the agent does
	Timeout     time.Duration // one call, default DefaultTimeout
	MaxOutput   int64         // the answer's bound in bytes, default DefaultMaxOutput
}

// Defaults of a Remote.
const (
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxOutput = 1 << 20
)

// Tool is a remote A2A agent as a loop.Tool named a2a_NAME, taking {"message"}: the
// message is sent as a new task, and the agent's answer (its artifacts and final
// message) is the tool's result. A task that fails, needs input or is rejected is an
// error result saying so; a timeout, an oversized or malformed answer is an error result
// too, so the model can go on without it.
//
// It speaks A2A 1.0 (JSON-RPC binding) first; an endpoint that does not know 1.0's
// methods (JSON-RPC "method not found", what an A2A 0.3 server answers to SendMessage,
// which it then has not run; see limitTransport) is asked again in 0.3, and the tool
// keeps to 0.3 for it.
type Tool struct {
	r      Remote
	client *http.Client
	legacy atomic.Bool // the endpoint answered as an A2A 0.3 server
}

// NewTool makes the tool of a Remote.
func NewTool(r Remote) *Tool {
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.MaxOutput <= 0 {
		r.MaxOutput = DefaultMaxOutput
	}
	return &Tool{r: r, client: &http.Client{Transport: limitTransport{max: r.MaxOutput}}}
}

// ToolName is the model's name of the remote agent's tool.
func ToolName(agent string) string { return "a2a_" + agent }

func (t *Tool) Spec() loop.ToolSpec {
	desc := t.r.Description
	if desc == "" {
		desc = "Ask the agent " + t.r.Name + " (a remote agent, over A2A) and get its answer."
	}
	return loop.ToolSpec{Name: ToolName(t.r.Name), Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"what to ask the agent"}},"required":["message"],"additionalProperties":false}`),
		Annotations: map[string]string{"a2a_agent": t.r.Name, "sandboxed": "false"}}
}

func (t *Tool) Call(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		return loop.ErrorResult("Error: " + err.Error()), nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.r.Timeout)
	defer cancel()
	res, err := t.send(ctx, args.Message)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return loop.ErrorResult(fmt.Sprintf("Error: agent %s did not answer within %s", t.r.Name, t.r.Timeout)), nil
	case err != nil:
		return loop.ErrorResult(fmt.Sprintf("Error: agent %s: %v", t.r.Name, err)), nil
	}
	return answer(t.r.Name, res), nil
}

// send sends the message as a new task, in A2A 1.0, or in 0.3 to an endpoint that
// answered as a 0.3 server.
func (t *Tool) send(ctx context.Context, text string) (a2a.SendMessageResult, error) {
	if !t.legacy.Load() {
		res, err := t.sendIn(ctx, a2a.Version, text)
		if !errors.Is(err, errNo10) {
			return res, err
		}
	}
	res, err := t.sendIn(ctx, a2av0.Version, text)
	if err == nil {
		t.legacy.Store(true)
	}
	return res, err
}

func (t *Tool) sendIn(ctx context.Context, version a2a.ProtocolVersion, text string) (a2a.SendMessageResult, error) {
	transport := a2aclient.WithJSONRPCTransport(t.client)
	if version == a2av0.Version {
		transport = a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: t.client})
	}
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{{URL: t.r.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: version}},
		transport, a2aclient.WithCallInterceptors(bearer(t.r.Token)))
	if err != nil {
		return nil, err
	}
	defer client.Destroy()
	return client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
}

// answer turns what the remote agent sent into the tool's result.
func answer(agent string, res a2a.SendMessageResult) loop.ToolResult {
	switch r := res.(type) {
	case *a2a.Message:
		return loop.TextResult(textOf(r))
	case *a2a.Task:
		var parts []string
		for _, a := range r.Artifacts {
			if text := partsText(a.Parts); text != "" {
				parts = append(parts, text)
			}
		}
		// The status message, unless it repeats the last artifact (agenthost's final
		// answer is both).
		if m := textOf(r.Status.Message); m != "" && (len(parts) == 0 || parts[len(parts)-1] != m) {
			parts = append(parts, m)
		}
		text := strings.Join(parts, "\n")
		switch r.Status.State {
		case a2a.TaskStateCompleted:
			return loop.TextResult(text)
		case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
			return loop.ErrorResult(fmt.Sprintf("Error: agent %s needs input it cannot get here (%s): %s", agent, stateName(r.Status.State), text))
		}
		return loop.ErrorResult(fmt.Sprintf("Error: agent %s: task %s: %s", agent, stateName(r.Status.State), text))
	}
	return loop.ErrorResult(fmt.Sprintf("Error: agent %s answered with %T", agent, res))
}

// stateName is a task state as A2A 0.3 wrote it ("input-required"): TASK_STATE_INPUT_REQUIRED
// is 1.0's wire name.
func stateName(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// bearer is the interceptor that sends the remote's token.
type bearer string

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	if b != "" {
		if req.ServiceParams == nil {
			req.ServiceParams = a2aclient.ServiceParams{}
		}
		req.ServiceParams.Append("Authorization", "Bearer "+string(b))
	}
	return ctx, nil, nil
}

func (bearer) After(context.Context, *a2aclient.Response) error { return nil }

// limitTransport bounds every response body: a remote agent cannot make the host read
// without end. It also tells an A2A 0.3 server apart: the JSON-RPC error "method not
// found" (-32601) to a 1.0 request becomes errNo10, because a 0.3 server's error carries
// data in a shape the 1.0 client cannot decode, so the client's own error would not say so.
type limitTransport struct{ max int64 }

// errNo10 is a JSON-RPC endpoint's "method not found" to an A2A 1.0 method.
var errNo10 = errors.New("the endpoint does not serve A2A 1.0")

func (l limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limited{rc: resp.Body, left: l.max}
	if r.Header.Get(a2a.SvcParamVersion) != string(a2a.Version) || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil // not 1.0, or a stream: read as it comes
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rpc struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err == nil && json.Unmarshal(body, &rpc) == nil && rpc.Error != nil && rpc.Error.Code == -32601 {
		return nil, errNo10
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return resp, nil
}

// errReader fails with err (io.EOF when nil).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

type limited struct {
	rc   io.ReadCloser
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errors.New("answer larger than the agent's max_output")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.rc.Close() }
