package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agenthost/agenthost/a2abridge"
	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// The agent over A2A (a2abridge), versions 1.0 and 0.3, through one request handler
// (the SDK's, with the bridge's executor and task store) and four bindings:
//
//	POST /a2a          JSON-RPC: 1.0 when the request says A2A-Version: 1.0 (as 1.0
//	                   clients do), 0.3 otherwise (a request without the header is 0.3,
//	                   as A2A 1.0 says)
//	/a2a/rest/...      HTTP+JSON: 1.0's paths (/a2a/rest/message:send, ...), and 0.3's
//	                   under /v1 (/a2a/rest/v1/message:send, ...)
//
// all behind the server's guard, its request body bound (MaxBodyBytes) and authentication like every /v1 route, and the agent
// card at GET /.well-known/agent-card.json, public as A2A expects (it names the agent and
// where to call it, nothing else), in the shape both versions read: 1.0's
// supportedInterfaces, and 0.3's url, preferredTransport and additionalInterfaces. An A2A
// run goes through a2aRun, which authorises and claims the session as POST /v1/runs does
// before the host's one run path.

// AgentCard describes the served agent on its A2A card.
type AgentCard struct {
	Name, Description string
}

// A2A routes.
const (
	a2aJSONRPCPath = "/a2a"
	a2aRESTPath    = "/a2a/rest"
)

func (s *Server) mountA2A() {
	exec := &a2abridge.Executor{Run: s.a2aRun, Abort: s.a2aAbort}
	s.a2aTasks = &a2abridge.Tasks{Allow: s.a2aAllow}
	handler := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(s.a2aTasks))
	rpc, rpc03 := a2asrv.NewJSONRPCHandler(handler), a2av0.NewJSONRPCHandler(handler)
	rest, rest03 := a2asrv.NewRESTHandler(handler), a2av0.NewRESTHandler(handler)
	s.mux.Handle("POST "+a2aJSONRPCPath, s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		if a2aV1(r) {
			rpc.ServeHTTP(w, r)
		} else {
			rpc03.ServeHTTP(w, r)
		}
	})))
	s.mux.Handle(a2aRESTPath+"/", s.auth(s.atLeast(access.RoleUser, func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, a2aRESTPath)
		r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, a2aRESTPath)
		if strings.HasPrefix(r2.URL.Path, a2av0.RESTPathPrefix+"/") {
			rest03.ServeHTTP(w, r2)
		} else {
			rest.ServeHTTP(w, r2)
		}
	})))
	s.mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, s.handleAgentCard)
}

// a2aV1 reports whether a JSON-RPC request is A2A 1.0's: its A2A-Version header names
// 1.x. No header is 0.3 (A2A 1.0's rule for a request without one).
func a2aV1(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
	return v == "1" || strings.HasPrefix(v, "1.")
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
	open, err := s.open(r.Context())
	if err != nil {
		s.writeStoreError(w, r, http.StatusServiceUnavailable, "agent card: "+err.Error(), err)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host
	card := &a2a.AgentCard{
		Name: s.opts.Card.Name, Description: s.opts.Card.Description,
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: base + a2aJSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: base + a2aRESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version},
			{URL: base + a2aJSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
			{URL: base + a2aRESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2av0.Version},
		},
		Version:            "1",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills:             []a2a.AgentSkill{{ID: "chat", Name: s.opts.Card.Name, Description: s.opts.Card.Description, Tags: []string{"agent"}}},
	}
	if card.Name == "" {
		card.Name = "agent"
	}
	if !open {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "bearer"}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"bearer": {}}}
	}
	// The 0.3 fields beside 1.0's (the SDK's union card).
	b, err := a2av0.NewStaticAgentCardProducer(card).(a2asrv.AgentCardJSONProducer).CardJSON(r.Context())
	var compact bytes.Buffer
	if err == nil {
		err = json.Compact(&compact, b)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent card: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(append(compact.Bytes(), '\n'))
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

// a2aAbort is tasks/cancel's stop of the task's run, through the door as POST .../abort
// (Door.Abort: the caller may write the session, the stop is recorded). Tasks.Get has
// already answered a task the caller may not reach as one that does not exist.
func (s *Server) a2aAbort(ctx context.Context, session, runID string) bool {
	p, _ := PrincipalFrom(ctx)
	ok, _ := s.door().Abort(ctx, p, session, runID, func(context.Context) (bool, error) {
		return s.opts.Agent.Abort(session, runID), nil
	})
	return ok
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
