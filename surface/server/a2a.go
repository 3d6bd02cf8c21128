package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/agenthost/agenthost/a2abridge"
	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// The agent over A2A (a2abridge): JSON-RPC at POST /a2a, behind the server's guard
// and authentication like every /v1 route, and the agent card at GET
// /.well-known/agent-card.json, public as A2A expects (it names the agent and where to call
// it, nothing else). An A2A run goes through a2aRun, which authorises and claims the
// session as POST /v1/runs does before the host's one run path.

// AgentCard describes the served agent on its A2A card.
type AgentCard struct {
	Name, Description string
}

func (s *Server) mountA2A() {
	exec := &a2abridge.Executor{Run: s.a2aRun, Abort: s.opts.Agent.Abort}
	s.a2aTasks = &a2abridge.Tasks{Allow: s.a2aAllow}
	handler := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec, a2asrv.WithTaskStore(s.a2aTasks)))
	s.mux.Handle("POST /a2a", s.auth(s.atLeast("user", handler.ServeHTTP)))
	s.mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, s.handleAgentCard)
}

// ForgetSession drops what the server keeps in memory of a deleted session: the A2A
// tasks of its context (their messages and answers). host.(*Host).OnDeleteSession calls
// it for every session the host deletes, whichever surface asked.
func (s *Server) ForgetSession(session string) {
	if s.a2aTasks != nil {
		s.a2aTasks.ForgetSession(session)
	}
}

func (s *Server) handleAgentCard(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	card := &a2a.AgentCard{
		Name: s.opts.Card.Name, Description: s.opts.Card.Description,
		URL:                scheme + "://" + r.Host + "/a2a",
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		Version:            "1",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills:             []a2a.AgentSkill{{ID: "chat", Name: s.opts.Card.Name, Description: s.opts.Card.Description, Tags: []string{"agent"}}},
	}
	if card.Name == "" {
		card.Name = "agent"
	}
	if s.opts.Token != "" || s.opts.Access != nil || s.opts.Verify != nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "bearer"}}
		card.Security = []a2a.SecurityRequirements{{"bearer": {}}}
	}
	writeJSON(w, http.StatusOK, card)
}

// a2aAllow decides, for the task store, whether the caller may read or act on a task's
// session, by the door, as every session route (decide): tasks/get needs Read,
// tasks/cancel and a message to the task need Write.
func (s *Server) a2aAllow(ctx context.Context, session string, write bool) bool {
	if _, ok := PrincipalFrom(ctx); !ok {
		return false
	}
	a := access.Read
	if write {
		a = access.Write
	}
	code, _, _ := s.decide(ctx, a, session)
	return code == 0
}

// a2aRun runs an A2A task step through the same checks as POST /v1/runs: the caller may
// start it (authorize), the session has no other run here (claim), then the host's run.
func (s *Server) a2aRun(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error) {
	fail := func(err error) (loop.RunResult, error) {
		return loop.RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err
	}
	if _, ok := PrincipalFrom(ctx); !ok {
		return fail(errors.New("unauthenticated A2A call")) // auth() runs first: not reached
	}
	if code, msg, _ := s.authorize(ctx, &in); code != 0 {
		return fail(fmt.Errorf("%d %s", code, msg))
	}
	if code, msg := s.claim(in); code != 0 {
		return fail(fmt.Errorf("%d %s", code, msg))
	}
	defer s.release(in)
	return s.opts.Agent.RunWith(ctx, in, emit)
}
