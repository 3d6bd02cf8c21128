package server

import (
	_ "embed"
	"net/http"
)

//go:embed web/index.html
var indexHTML []byte

//go:embed web/trace.js
var traceJS []byte

//go:embed web/workflows.js
var workflowsJS []byte

//go:embed web/fork.js
var forkJS []byte

// handleTraceJS serves the trace view's script (web/trace.js), one of the two scripts
// the page loads from the server rather than inline.
func (s *Server) handleTraceJS(w http.ResponseWriter, _ *http.Request) { serveJS(w, traceJS) }

// handleWorkflowsJS serves the workflow view's script (web/workflows.js).
func (s *Server) handleWorkflowsJS(w http.ResponseWriter, _ *http.Request) { serveJS(w, workflowsJS) }

// handleForkJS serves the console's fork, compare and "save as test case" (web/fork.js).
func (s *Server) handleForkJS(w http.ResponseWriter, _ *http.Request) { serveJS(w, forkJS) }

func serveJS(w http.ResponseWriter, js []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(js)
}

// handlePage serves the live page: sessions on the left, a prompt box, and the events of
// the run it starts as they stream. It calls the same /v1 API (with the token it is
// given in its token field), so it needs no privileges of its own.
func (s *Server) handlePage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// frame-ancestors: a foreign page must not frame the page and trick a click on Run.
	// img-src blob:: the attachments' images, fetched with the token (media.js).
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' blob:; frame-ancestors 'self'")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(indexHTML)
}
