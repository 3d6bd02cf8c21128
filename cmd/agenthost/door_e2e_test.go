package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agenthost/agenthost/audit"
)

// The surface matrix: every surface that enters the host, through the real binaries, owes
// the same guarantees, because each goes through the host's one door (host.Door). One
// shared setup (matrixEnv: one PostgreSQL database, one `serve`, one `serve --workers 1`,
// one `mcp serve --http`, three users) serves every cell; the rows are matrixSurfaces.
// The columns:
//
//   - audit: each run the entry makes has its start and end in the audit log, for the
//     user it was made for (the actor: her id) and naming the principal who asked (its
//     id and role in the detail: an admin resuming a user's run is named);
//   - span: the entry is an invoke_agent span at the OTLP receiver naming the principal
//     (enduser.id);
//   - ledger: an entry that calls the model has its spend on a run's end record (a
//     sampling's on the run that asked for it);
//   - redaction: a phone number in the model's answer or a tool's result reaches the
//     surface's wire as "[phone]", never as it was;
//   - foreign: bo, a user who neither owns nor shares the object, is refused with what an
//     unknown object gets (404), and the object is as it was.
//
// A cell a surface cannot have says why in the table (a read starts no run; a local user
// administers the store file; a tool call spends nothing).
func TestE2E_SurfaceMatrix_EverySurfaceIsAuditedTracedChargedAndAuthorisedByTheDoor(t *testing.T) {
	m := newMatrixEnv(t)
	for _, s := range m.surfaces() {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			had := len(auditRecords(t, m.e))
			spans := len(m.recv.named("invoke_agent "))
			wire := s.enter(t)
			recs := auditRecords(t, m.e)[had:]
			if s.user == "" {
				t.Logf("audit, span, ledger: no cell: %s", s.noRun)
			} else {
				m.checkRun(t, s, recs, spans)
			}
			if s.secret {
				t.Run("redaction", func(t *testing.T) {
					if strings.Contains(wire, "555 0100") || !strings.Contains(wire, "[phone]") {
						t.Fatalf("the wire carries the number, or no redaction:\n%s", wire)
					}
				})
			}
			if s.foreign == nil {
				t.Logf("foreign: no cell: %s", s.why)
				return
			}
			t.Run("foreign", s.foreign)
		})
	}
}

// checkRun is the audit, span and ledger columns of a surface whose entry runs.
func (m *matrixEnv) checkRun(t *testing.T, s matrixSurface, recs []audit.Record, spans int) {
	t.Run("audit", func(t *testing.T) {
		var starts, ends int
		for _, r := range recs {
			switch r.Action {
			case audit.ActionRunStart:
				starts++
			case audit.ActionRunEnd:
				ends++
			default:
				continue
			}
			if r.Actor != s.user || r.Detail["actor_id"] != s.by || r.Detail["actor_role"] == "" {
				t.Errorf("%s %s for %q by %q (role %q), want for %q by %q", r.Action, r.Target, r.Actor, r.Detail["actor_id"], r.Detail["actor_role"], s.user, s.by)
			}
		}
		if starts == 0 || starts != ends {
			t.Fatalf("%d run starts and %d ends in the audit log: %+v", starts, ends, recs)
		}
	})
	t.Run("span", func(t *testing.T) {
		waitSpan(t, m.recv, spans, s.by)
	})
	if s.tokens == "" { // a tool call outside a run calls no model: nothing to charge
		return
	}
	t.Run("ledger", func(t *testing.T) {
		for _, r := range recs {
			if r.Action == audit.ActionRunEnd && r.Detail["tokens"] == s.tokens {
				return
			}
		}
		t.Fatalf("no run end charged the model calls' %s tokens: %+v", s.tokens, recs)
	})
}

func auditRecords(t *testing.T, e *agentEnv) []audit.Record {
	t.Helper()
	r := e.agenthost(t, "audit", "list", "--json")
	var recs []audit.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	return recs
}

// waitSpans waits until the receiver has more invoke_agent spans than it had (a CLI
// process exports at exit, serve in batches) and returns the new ones.
func waitSpans(t *testing.T, recv *otlpReceiver, had int) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for {
		if got := recv.named("invoke_agent "); len(got) > had {
			return got[had:]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new invoke_agent span at the receiver (had %d)", had)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSpan waits for a new invoke_agent span naming the principal (enduser.id; "" for
// one without an id). Spans of several processes arrive in batches, so it looks for one
// among all the new ones rather than taking every new span for this entry's.
func waitSpan(t *testing.T, recv *otlpReceiver, had int, who string) {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for {
		var seen []string
		for _, sp := range recv.named("invoke_agent ")[had:] {
			if spanAttr(sp, "enduser.id") == who {
				return
			}
			seen = append(seen, spanAttr(sp, "enduser.id"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new invoke_agent span names enduser.id %q (new spans name %q)", who, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// mcpCall calls one tool over the transport (`mcp serve --user ana` over stdio, or
// --http) and closes the client, so a stdio process exits (and exports its spans); it
// returns the result's text.
func mcpCall(t *testing.T, tr mcp.Transport, tool string, args map[string]any, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// stdioMCP is `mcp serve --user ana` as an MCP client's transport.
func stdioMCP(e *agentEnv) mcp.Transport {
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve", "--user", "ana")
	cmd.Dir = e.dir
	return &mcp.CommandTransport{Command: cmd}
}
