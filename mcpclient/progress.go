//lint:file-ignore SA1019 MCP sampling, roots and logging are deprecated as of the 2026-07-28 protocol but still served in its deprecation window; agenthost supports them for the servers and clients that use them

package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress, logs, cancellation and roots. Each call carries a progress token of its
// own, so a server's notifications/progress is reported in the run that made the call
// (Config.Notify, the host's one notification path: a progress event of the run); a
// log line goes to the call in flight when there is exactly one, else outside any run.
// A call whose context ends is cancelled towards the server (the SDK sends
// notifications/cancelled). A progress whose _meta carries MetaResultDelta (a string)
// passes it on as "result_delta": a piece of the call's result, which the host shows as
// the run's tool_result_delta (MCP's progress has no content of its own). Roots are the directories the entry lists, as file:// URIs.

var progressSeq atomic.Int64

// MetaResultDelta is the _meta key of a progress notification that carries a piece of
// the call's result, as text.
const MetaResultDelta = "agenthost/result_delta"

// track registers a call's context under a new progress token.
func (s *Server) track(ctx context.Context) (token string, done func()) {
	token = fmt.Sprintf("agenthost-%d", progressSeq.Add(1))
	s.curMu.Lock()
	if s.inflight == nil {
		s.inflight = map[string]context.Context{}
	}
	s.inflight[token] = ctx
	s.curMu.Unlock()
	return token, func() { s.curMu.Lock(); delete(s.inflight, token); s.curMu.Unlock() }
}

func (s *Server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if s.cfg.Notify == nil || req.Params == nil {
		return
	}
	s.curMu.Lock()
	ctx := s.inflight[fmt.Sprint(req.Params.ProgressToken)]
	s.curMu.Unlock()
	if ctx == nil {
		return // a token of no call of ours: dropped
	}
	p := map[string]any{"progress": req.Params.Progress, "total": req.Params.Total, "message": req.Params.Message}
	if d, ok := req.Params.Meta[MetaResultDelta].(string); ok && d != "" {
		p["result_delta"] = d
	}
	b, _ := json.Marshal(p)
	s.cfg.Notify(ctx, "notifications/progress", b)
}

func (s *Server) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	if s.cfg.Notify == nil || req.Params == nil {
		return
	}
	ctx := context.Background()
	s.curMu.Lock()
	if len(s.inflight) == 1 {
		for _, c := range s.inflight {
			ctx = c
		}
	}
	s.curMu.Unlock()
	data, _ := json.Marshal(req.Params.Data)
	b, _ := json.Marshal(map[string]any{"level": req.Params.Level, "logger": req.Params.Logger, "data": json.RawMessage(data)})
	s.cfg.Notify(ctx, "notifications/message", b)
}

// roots are the entry's roots as MCP roots.
func (s *Server) roots() []*mcp.Root {
	var out []*mcp.Root
	for _, r := range s.cfg.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		out = append(out, &mcp.Root{URI: "file://" + filepath.ToSlash(abs), Name: filepath.Base(abs)})
	}
	return out
}
