package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// Plugins report through MCP notifications: notifications/message (a log line; the
// sandbox also sends a plugin's Extism log lines and its stdout and stderr this way, at
// level debug with logger "stdout" or "stderr") and notifications/progress. Inside a run
// they become the run's plugin_log and progress events (loop.Notify); outside one
// (`plugins call`, loading) they go to Options.OnReport. A piece of a tool call's result
// — a Wasm plugin's stream_result (sandbox.MethodResultDelta) or the result_delta an MCP
// server's progress carries (mcpclient, from its _meta) — becomes the run's
// tool_result_delta through loop.StreamResult, the one door of streamed results; outside
// a run it is dropped, since the call's result says it all.

// logParams is MCP's LoggingMessageNotification params.
type logParams struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger"`
	Data   json.RawMessage `json:"data"`
}

// progressParams is MCP's ProgressNotification params.
type progressParams struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// report turns a notification into a loop.PluginLogData or loop.ProgressData, or nil
// for methods that report nothing to a person (list changes).
func report(plugin, method string, params json.RawMessage) any {
	switch method {
	case "notifications/message":
		var p logParams
		if json.Unmarshal(params, &p) != nil {
			return loop.PluginLogData{Plugin: plugin, Level: "warning", Message: "unreadable log notification: " + string(params)}
		}
		msg := string(p.Data)
		var s string
		if json.Unmarshal(p.Data, &s) == nil {
			msg = s
		}
		if p.Logger != "" {
			msg = "[" + p.Logger + "] " + msg
		}
		if loop.LogLevelRank(p.Level) < 0 {
			p.Level = "info"
		}
		return loop.PluginLogData{Plugin: plugin, Level: p.Level, Message: msg}
	case "notifications/progress":
		var p progressParams
		if json.Unmarshal(params, &p) != nil {
			return loop.PluginLogData{Plugin: plugin, Level: "warning", Message: "unreadable progress notification: " + string(params)}
		}
		return loop.ProgressData{Plugin: plugin, Progress: p.Progress, Total: p.Total, Message: p.Message}
	}
	return nil
}

// resultDelta is the piece of a tool call's result a notification carries, if any.
func resultDelta(method string, params json.RawMessage) string {
	var p struct {
		Text        string `json:"text"`
		ResultDelta string `json:"result_delta"` // mcpclient.MetaResultDelta, from _meta
	}
	switch method {
	case sandbox.MethodResultDelta, "notifications/progress":
		if json.Unmarshal(params, &p) != nil {
			return ""
		}
	}
	if method == sandbox.MethodResultDelta {
		return p.Text
	}
	return p.ResultDelta
}

func (s *services) Notify(ctx context.Context, plugin, method string, params json.RawMessage) {
	if method == "notifications/tools/list_changed" {
		s.toolsChanged(plugin)
		return
	}
	if text := resultDelta(method, params); text != "" {
		loop.StreamResult(ctx, text)
		if method == sandbox.MethodResultDelta {
			return
		}
	}
	r := report(plugin, method, params)
	if r == nil || loop.Notify(ctx, r) {
		return
	}
	if s.onReport != nil {
		s.onReport(r)
	}
}

// toolsChanged remembers that a plugin's tool list changed; Host.RefreshTools reads it
// again once the call that said so is over (the plugin cannot be asked from inside it).
func (s *services) toolsChanged(plugin string) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if s.dirty == nil {
		s.dirty = map[string]bool{}
	}
	s.dirty[plugin] = true
}

func (s *services) takeDirty() map[string]bool {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	d := s.dirty
	s.dirty = nil
	return d
}

// RefreshTools reads again the tool lists of the plugins that said theirs changed, and
// renames the tools as the model sees them. It reports whether any list was read again.
// A run's agent keeps the tools it was built with; `mcp serve` offers the new list to
// its clients (notifications/tools/list_changed), and without a provider its tool-only
// agent is built again so that the new tools can be called. ctx names the session whose
// instances are asked (sandbox.WithSession): with isolation "session" the list is that
// session's.
func (h *Host) RefreshTools(ctx context.Context) (bool, error) {
	dirty := h.services.takeDirty()
	if len(dirty) == 0 {
		return false, nil
	}
	for name := range dirty {
		if p, ok := h.Plugin(name); ok {
			if err := p.RefreshTools(ctx); err != nil {
				return true, fmt.Errorf("plugin %q: read its tools again: %w", name, err)
			}
		}
	}
	tools, warnings := h.withSteady(h.withUserSecrets(namespaceTools(h.toolPlugins(), h.mcpServers)))
	h.toolsMu.Lock()
	h.tools, h.Warnings = tools, warnings
	h.toolsMu.Unlock()
	if h.toolAgent.Load() != nil {
		return true, h.buildToolAgent()
	}
	return true, nil
}
