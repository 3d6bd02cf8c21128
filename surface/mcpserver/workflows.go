package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/workflow"
)

// toolNameRE is what MCP clients accept as a tool name.
var toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`) })

// AddWorkflows offers each declared workflow as a tool, workflow_NAME, whose input schema
// is the workflow's inputs schema. A call runs the workflow on the host's engine (the
// one tool pipeline for its tool steps, its record stored, docs/workflows.md) and
// returns its outputs as structured content, each step's end reported as progress when
// the client asked for it. A run left waiting for an approval step is an isError result
// naming the run id and the step: an MCP call cannot be answered later, so the decision
// is taken where workflows are resumed (workflow run --run-id ID --approve STEP, or the
// HTTP route). Workflows with prompt steps need the provider: they are offered only
// when withAgent is set, and listed in skipped otherwise.
func AddWorkflows(srv *mcp.Server, h *host.Host, withAgent bool) (skipped []string) {
	for _, name := range h.Manifest.WorkflowNames() {
		w, _ := h.Manifest.Workflow(name)
		tool := "workflow_" + name
		switch {
		case !toolNameRE().MatchString(tool):
			skipped = append(skipped, fmt.Sprintf("%s: not a valid MCP tool name", tool))
			continue
		case w.UsesAgent() && !withAgent:
			skipped = append(skipped, fmt.Sprintf("%s: has prompt steps, which need the provider (--agent)", tool))
			continue
		}
		schema := map[string]any{"type": "object"}
		if w.Def.Inputs != nil {
			b, _ := json.Marshal(w.Def.Inputs)
			if s, err := objectSchema(b); err == nil {
				schema = s
			}
		}
		desc := w.Def.Description
		if desc == "" {
			desc = "Run the " + name + " workflow"
		}
		srv.AddTool(&mcp.Tool{Name: tool, Description: desc + " (a declared workflow: steps " + strings.Join(w.StepIDs(), ", ") + ")",
			InputSchema: schema}, workflowHandler(h, w))
	}
	return skipped
}

func workflowHandler(h *host.Host, w *workflow.Workflow) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta["progressToken"]
		}
		total, done := float64(len(w.StepIDs())), 0.0
		emit := func(e workflow.Event) {
			if e.Type != workflow.EventStepFinished || token == nil || req.Session == nil {
				return
			}
			done++
			msg := e.Step + " " + e.Status
			if e.Error != "" {
				msg += ": " + e.Error
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: msg})
		}
		res, err := h.Workflows().Run(ctx, w, workflow.RunInput{Inputs: req.Params.Arguments, Owner: UserFrom(ctx)}, emit) // the caller's run: its step sessions are theirs
		if err != nil {
			if errors.Is(err, workflow.ErrInputs) {
				return errResult(err.Error()), nil
			}
			return nil, err
		}
		rec := res.Record
		switch rec.Status {
		case workflow.RunCompleted:
			out := map[string]any{"run_id": rec.RunID, "outputs": rec.Outputs}
			b, _ := json.Marshal(out)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil
		case workflow.RunInterrupted:
			return errResult(fmt.Sprintf("workflow %s run %s waits for approval of %s; decide with `agenthost workflow run %s --run-id %s --approve STEP` (or --reject), or POST /v1/workflows/%s/runs",
				w.Name, rec.RunID, strings.Join(res.Waiting, ", "), w.Name, rec.RunID, w.Name)), nil
		}
		return errResult(fmt.Sprintf("workflow %s run %s ended %s: %s", w.Name, rec.RunID, rec.Status, rec.Error)), nil
	}
}

func errResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
