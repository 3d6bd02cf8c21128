package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

// AddAgent offers the whole agent as one tool, ask_<agent>: its question starts a run
// (a session of its own) for the request's user (UserFrom), through the host's door
// (host.Runner), and its final answer is the result; a run that does not complete is an
// isError result saying how it ended. While the run works, a client that sent a
// progressToken is told what it does (forwarder.runEvent): the text its model writes, as
// result pieces, and each tool call it starts, as a step of progress.
func AddAgent(srv *mcp.Server, h *host.Host) {
	name := "ask_" + h.Manifest.Agent.Name
	schema := map[string]any{"type": "object", "required": []string{"question"},
		"properties": map[string]any{"question": map[string]any{"type": "string", "description": "what to ask the agent"}}}
	srv.AddTool(&mcp.Tool{Name: name, Description: "Ask the " + h.Manifest.Agent.Name + " agent; it may use its tools. Returns its final answer.",
		InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Question == "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: want {\"question\": \"...\"}"}}}, nil
		}
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta["progressToken"]
		}
		fw := &forwarder{ss: req.Session, token: token}
		res, _ := h.Runner().RunWith(ctx, loop.RunInput{User: UserFrom(ctx), Messages: []loop.Message{loop.UserMessage(args.Question)}},
			func(e loop.Event) { fw.runEvent(ctx, e) })
		if res.Status != loop.StatusCompleted || res.Final == nil {
			msg := fmt.Sprintf("the run ended %s (%s)", res.Status, res.Reason)
			if res.Err != nil {
				msg += ": " + res.Err.Error()
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Final.Text()}}}, nil
	})
}

// runEvent forwards an event of an ask_<agent> run to the client that asked:
//
//   - a text fragment of the run's own model (model_delta, kind text, no path) is a
//     result piece, as a streamed tool's (_meta[metaResultDelta]), raising the progress
//     by deltaStep: the words of every answer the model writes, its final one last (the
//     call's result is the final answer alone);
//   - a tool call starting (step_start), the run's own or a nested run's (an ask_NAME
//     of its team, a merge agent's asks), is a step: the progress rises to the next
//     whole number, with the message "calling NAME", prefixed "PATH: " for a nested
//     run's ("assistant/expert: calling lookup"); there is no total;
//   - a plugin's log line goes to the client's log, as during a tool call.
//
// The rest (a nested run's text, a tool's own progress and result pieces, which have
// their own scale and are not the answer) stays in the run's session.
func (f *forwarder) runEvent(ctx context.Context, e loop.Event) {
	if f.ss == nil {
		return
	}
	switch d := e.Data.(type) {
	case *loop.ModelDeltaData:
		if e.Path != "" || d.Kind != loop.DeltaText || d.Text == "" {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.progress(ctx, &mcp.ProgressNotificationParams{Progress: f.last + deltaStep, Meta: mcp.Meta{metaResultDelta: d.Text}})
	case *loop.StepStartData:
		msg := "calling " + d.Name
		if e.Path != "" {
			msg = e.Path + ": " + msg
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.progress(ctx, &mcp.ProgressNotificationParams{Progress: math.Floor(f.last) + 1, Message: msg})
	case *loop.PluginLogData:
		f.forward(ctx, d)
	}
}
