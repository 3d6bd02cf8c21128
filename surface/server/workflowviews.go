package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/workflow"
)

// workflowView is a declared workflow as GET /v1/workflows lists it: enough to draw its
// DAG, and the JSON Schema of its inputs (the console's start form is drawn from it).
type workflowView struct {
	Name        string               `json:"name"`
	Description string               `json:"description,omitempty"`
	Inputs      workflow.Table       `json:"inputs,omitempty"`
	Steps       []workflow.GraphStep `json:"steps"`
}

// handleWorkflowList serves GET /v1/workflows: the declared workflows and their steps.
func (s *Server) handleWorkflowList(w http.ResponseWriter, _ *http.Request) {
	out := []workflowView{}
	if s.opts.Workflows.List != nil {
		for _, name := range s.opts.Workflows.List() {
			if wf, ok := s.opts.Workflows.Find(name); ok {
				out = append(out, workflowView{Name: name, Description: wf.Def.Description, Inputs: wf.Def.Inputs, Steps: wf.Graph()})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleWorkflowRuns serves GET /v1/workflows/{name}/runs[?limit=N]: its stored runs
// the caller may read (the door's AuthorizeOwned: a user's own, every run for admins and
// operators), the latest first (default 50, at most 1,000).
func (s *Server) handleWorkflowRuns(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.opts.Workflows.Find(name); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no workflow %q", name))
		return
	}
	limit := 50
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be a number from 1 to 1000")
			return
		}
		limit = n
	}
	runs, err := workflow.ListRuns(r.Context(), s.opts.Workflows.Engine.Store, name, 0)
	switch {
	case errors.Is(err, workflow.ErrNoListing):
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
		return
	}
	p, _ := PrincipalFrom(r.Context())
	mine := runs[:0]
	for _, run := range runs {
		if len(mine) == limit {
			break
		}
		switch err := s.door().AuthorizeOwned(r.Context(), p, access.Read, run.Owner); {
		case err == nil:
			mine = append(mine, run)
		case !errors.Is(err, access.ErrNotVisible) && !errors.Is(err, access.ErrNotAllowed):
			s.writeStoreError(w, r, http.StatusServiceUnavailable, err.Error(), err)
			return
		}
	}
	writeJSON(w, http.StatusOK, mine)
}

// handleWorkflowRecord serves GET /v1/workflows/{name}/runs/{id}: a run's stored record
// (each step's status, attempts, output, error and fan-out items); ?owner=ID names the
// user whose run it is (the listing gives each run's owner; none: the store operator's). Another
// user's run answers 404, as one that does not exist (the door's AuthorizeOwned).
func (s *Server) handleWorkflowRecord(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	if _, ok := s.opts.Workflows.Find(name); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no workflow %q", name))
		return
	}
	p, _ := PrincipalFrom(r.Context())
	owner := r.URL.Query().Get("owner")
	ok, err := true, s.door().AuthorizeOwned(r.Context(), p, access.Read, owner)
	if errors.Is(err, access.ErrNotVisible) || errors.Is(err, access.ErrNotAllowed) {
		ok, err = false, nil // another user's run: as absent as one that does not exist
	}
	var rec *workflow.Record
	if ok && err == nil {
		rec, ok, err = workflow.LoadOwnedRecord(r.Context(), s.opts.Workflows.Engine.Store, name, owner, id)
	}
	switch {
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, err.Error(), err)
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("workflow %s has no run %q", name, id))
	default:
		writeJSON(w, http.StatusOK, rec)
	}
}
