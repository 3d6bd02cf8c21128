package server

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// Attachments over HTTP: GET /v1/sessions/{id}/attachments/{ref} answers the bytes of an
// image, audio or file part the session stores (ref is the part's attachment, the hex
// sha256 of its bytes), for the console to show an image or offer a file.
//
// It is a session route like the others: the door decides Read on the session, and the
// store looks the attachment up by session and hash, so a ref of another session is not
// found. Every miss answers the same 404 ("no attachment R in session S"): a session
// the caller may not read, one that does not exist, and a ref the session does not hold
// (or that is no ref at all: a path, "..") cannot be told apart.
// What it serves is a user's or a tool's bytes, never trusted:
//   - the type is the one the loop sniffed when it stored them, never the client's;
//   - X-Content-Type-Options: nosniff, so a browser does not guess another;
//   - Content-Security-Policy "default-src 'none'; sandbox": opened on its own, an
//     HTML or SVG attachment runs no script, loads nothing and is not same-origin;
//   - Content-Disposition: attachment for everything but a raster image, so a browser
//     downloads a file rather than render it;
//   - Cache-Control: no-store: erased with its session, it stays in no browser cache.
//
// Memory: the bytes are sealed as one value in the store, so they are opened whole; the
// route holds one copy, bounded by the per-part limit (loop.AttachmentLimits), and
// serves it as it is (Range requests too, through http.ServeContent).

//go:embed web/media.js
var mediaJS []byte

// routeMedia adds the attachment route and the console's script for media.
func (s *Server) routeMedia() {
	s.mux.HandleFunc("GET /media.js", func(w http.ResponseWriter, _ *http.Request) { serveJS(w, mediaJS) })
	s.mux.Handle("GET /v1/sessions/{id}/attachments/{ref}", s.auth(s.handleAttachment))
}

// inlineImages are the image types a browser may render in place: raster formats that
// carry no script. An SVG (image/svg+xml) is a document and downloads like any file.
var inlineImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true,
	"image/webp": true, "image/bmp": true, "image/x-icon": true, "image/vnd.microsoft.icon": true}

// validRef reports whether ref is a stored attachment's reference: 64 lowercase hex
// digits. Anything else (a path, "..", an encoded slash) is refused before the store.
func validRef(ref string) bool {
	if len(ref) != 64 {
		return false
	}
	for _, c := range ref {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Server) handleAttachment(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	notFound := fmt.Sprintf("no attachment %.12s in session %q", ref, id)
	code, msg, err := s.decide(r.Context(), access.Read, id)
	switch {
	case code == http.StatusNotFound: // a foreign session reads as an unknown one, and as a wrong ref
		writeError(w, code, notFound)
		return
	case code != 0 && err != nil:
		s.writeStoreError(w, r, code, msg, err)
		return
	case code != 0:
		writeError(w, code, msg)
		return
	case !validRef(ref):
		writeError(w, http.StatusNotFound, notFound)
		return
	}
	store, ok := s.opts.Store.(loop.AttachmentStore)
	if !ok {
		writeError(w, http.StatusNotFound, notFound)
		return
	}
	a, err := store.Attachment(r.Context(), id, ref)
	switch {
	case errors.Is(err, loop.ErrNoAttachment):
		writeError(w, http.StatusNotFound, notFound)
		return
	case err != nil:
		s.writeStoreError(w, r, http.StatusInternalServerError, fmt.Sprintf("attachment %.12s of session %q: %v", ref, id, err), err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", attachmentType(a.MimeType))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	name := r.URL.Query().Get("name")
	if inlineImages[a.MimeType] {
		h.Set("Content-Disposition", disposition("inline", name, a))
	} else {
		h.Set("Content-Disposition", disposition("attachment", name, a))
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.Data))
}

// attachmentType is the Content-Type served: the sniffed type, or an opaque one when the
// store holds something that is not a media type.
func attachmentType(t string) string {
	if _, _, err := mime.ParseMediaType(t); err != nil || strings.ContainsAny(t, "\r\n") {
		return "application/octet-stream"
	}
	return t
}

// disposition is a Content-Disposition with a file name: the one the client asks for
// (the part's name, ?name=), cleaned, else the hash's first 12 digits.
func disposition(kind, name string, a loop.Attachment) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return -1
		}
		return r
	}, name)
	if name == "" || len(name) > 255 {
		name = a.SHA256[:12]
	}
	if v := mime.FormatMediaType(kind, map[string]string{"filename": name}); v != "" {
		return v
	}
	return kind
}
