package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// The memory routes manage long-term memory (package memory). An admin or operator may
// read and erase any user's memories, naming the user; a user or viewer acts on their own
// only (pinUser): naming someone else is refused, naming no one means themselves, and a
// viewer only reads.
//
//	GET    /v1/memory?user=U[&agent=A][&kind=K][&q=TEXT][&limit=N]  list, or search with q
//	POST   /v1/memory  {"user","agent","kind","text","metadata"}     201 with the entry as
//	                                                                 stored (redacted); 409
//	                                                                 past the user's quota
//	DELETE /v1/memory/{id}[?user=U]                                  204; 404 when none
//	DELETE /v1/memory?user=U[&agent=A]                               {"deleted": n}
func (s *Server) memoryStore(w http.ResponseWriter) (memory.Store, bool) {
	if s.opts.Memory != nil {
		return s.opts.Memory, true
	}
	ms, ok := s.opts.Store.(memory.Store)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store keeps no memories")
	}
	return ms, ok
}

func (s *Server) handleMemoryList(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memoryStore(w)
	if !ok {
		return
	}
	f, ok := s.memoryFilter(w, r)
	if !ok {
		return
	}
	if q := r.URL.Query().Get("q"); q != "" {
		hits, err := ms.SearchMemory(r.Context(), memory.Query{User: f.User, Agent: f.Agent, Kind: f.Kind, Text: q, Limit: f.Limit})
		if err != nil {
			s.writeStoreError(w, r, http.StatusInternalServerError, "search memory: "+err.Error(), err)
			return
		}
		writeJSON(w, http.StatusOK, nonNil(hits))
		return
	}
	entries, err := ms.ListMemory(r.Context(), f)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(entries))
}

func (s *Server) handleMemoryAdd(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memoryStore(w)
	if !ok {
		return
	}
	var body struct {
		User     string            `json:"user"`
		Agent    string            `json:"agent"`
		Kind     memory.Kind       `json:"kind"`
		Text     string            `json:"text"`
		Metadata map[string]string `json:"metadata"`
	}
	if !s.readJSON(w, r, &body) {
		return
	}
	if err := loop.CheckUser(body.User); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.pinUser(w, r, &body.User) {
		return
	}
	e, err := memory.New(body.User, body.Agent, body.Kind, body.Text, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	e.Metadata = body.Metadata
	switch err := ms.AddMemory(r.Context(), e); {
	case errors.Is(err, memory.ErrQuota):
		writeError(w, http.StatusConflict, err.Error())
		return
	case errors.Is(err, memory.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	if got, err := ms.ListMemory(r.Context(), memory.Filter{ID: e.ID, User: e.User}); err == nil && len(got) == 1 {
		e = got[0] // as stored: redacted
	}
	writeJSON(w, http.StatusCreated, e)
}

func (s *Server) handleMemoryDelete(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memoryStore(w)
	if !ok {
		return
	}
	f := memory.Filter{ID: r.PathValue("id"), User: r.URL.Query().Get("user")}
	if !s.pinUser(w, r, &f.User) {
		return
	}
	if f.ID == "" {
		var ok bool
		if f, ok = s.memoryFilter(w, r); !ok {
			return
		}
	}
	n, err := ms.DeleteMemory(r.Context(), f)
	if err == nil && n > 0 && s.opts.Audit != nil {
		target := f.ID
		if target == "" {
			target = "user:" + f.User + " agent:" + f.Agent
		}
		err = s.opts.Audit(r.Context(), audit.Record{Action: audit.ActionMemoryDelete, Actor: actor(r.Context()), Target: target,
			Detail: map[string]string{"deleted": strconv.Itoa(n)}})
	}
	switch {
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
	case f.ID != "" && n == 0:
		writeError(w, http.StatusNotFound, "no memory "+strconv.Quote(f.ID))
	case f.ID != "":
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
	}
}

// memoryFilter reads user, agent, kind and limit; one of user and agent is required.
func (s *Server) memoryFilter(w http.ResponseWriter, r *http.Request) (memory.Filter, bool) {
	q := r.URL.Query()
	f := memory.Filter{User: q.Get("user"), Agent: q.Get("agent"), Kind: memory.Kind(q.Get("kind"))}
	if !s.pinUser(w, r, &f.User) {
		return f, false
	}
	if err := errors.Join(loop.CheckUser(f.User), loop.CheckUser(f.Agent)); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return f, false
	}
	if f.Kind != "" && f.Kind != memory.KindFact && f.Kind != memory.KindPreference {
		writeError(w, http.StatusBadRequest, "kind "+strconv.Quote(string(f.Kind))+": want fact or preference")
		return f, false
	}
	if f.User == "" && f.Agent == "" {
		writeError(w, http.StatusBadRequest, "user (or agent, for an agent's shared memories) is required")
		return f, false
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit "+strconv.Quote(v)+": want 1 to 1000")
			return f, false
		}
		f.Limit = n
	}
	return f, true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// handleAudit is GET /v1/audit[?after=SEQ][&limit=N]: audit records after seq (default
// 0), oldest first, at most limit (default 1000), and whether the records returned chain
// (verified: a client that pages keeps the last hash to check the next page's first prev;
// the first page, after 0, must begin with the log's genesis record, audit.VerifyLog).
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	as, ok := s.opts.Store.(audit.Store)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store keeps no audit log")
		return
	}
	q := r.URL.Query()
	after, limit := int64(0), 1000
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after "+strconv.Quote(v)+": want a record number, 0 or more")
			return
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "limit "+strconv.Quote(v)+": want 1 to 10000")
			return
		}
		limit = n
	}
	recs, err := as.Audit(r.Context(), after, limit)
	if err != nil {
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	// From the start, the page is checked as a log: it begins with its genesis record.
	verr := audit.Verify(recs)
	if after == 0 {
		_, verr = audit.VerifyLog(recs, false)
	}
	out := map[string]any{"records": nonNil(recs), "verified": verr == nil}
	if verr != nil {
		out["error"] = verr.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// pinUser keeps a caller without the admin or operator role to their own memories,
// which are keyed by their id; admin and operator may name a present user by name (their
// id) or an id.
func (s *Server) pinUser(w http.ResponseWriter, r *http.Request, user *string) bool {
	p, _ := PrincipalFrom(r.Context())
	switch {
	case p.Privileged():
		if *user != "" && !access.IsID(*user) && s.opts.Access != nil {
			if u, ok, err := access.Lookup(r.Context(), s.opts.Access, *user); err == nil && ok {
				*user = u.ID
			}
		}
		return true
	case p.Role == access.RoleViewer && r.Method != http.MethodGet:
		writeError(w, http.StatusForbidden, p.Name+" has the viewer role and may only read memories")
		return false
	case *user != "" && *user != p.Name && *user != p.ID:
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s may not act on the memories of %q", p.Name, *user))
		return false
	}
	*user = p.ID
	return true
}
