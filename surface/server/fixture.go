package server

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
)

// Fixturer is the door's part in "save as test case" (host.(*Door) is one): the
// session's last finished run as the replay fixture `sessions export ID --fixture DIR`
// writes, file name → bytes, for a caller who may read the session. A session the caller
// may not read gets access.ErrNotVisible, one with no run to record loop.ErrNoSuchRun.
type Fixturer interface {
	Fixture(ctx context.Context, p access.Principal, session, name string) (map[string][]byte, error)
}

// handleFixture is GET /v1/sessions/{id}/fixture[?id=NAME]: a zip archive holding one
// directory, NAME/ (the case's id: the session's id unless given), with the fixture's
// files (cases.jsonl, model.json, tools.json), so that unpacked it is what `eval
// --replay NAME` reads. 404 for a session the caller may not read (the same as for
// none), 409 with the reason for a session with no run to record, 400 for a NAME that
// is not a plain name.
func (s *Server) handleFixture(w http.ResponseWriter, r *http.Request) {
	f, ok := s.door().(Fixturer)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server cannot export sessions")
		return
	}
	session, name := r.PathValue("id"), r.URL.Query().Get("id")
	if name != "" && !plainName(name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("id %q: a case id is letters, digits, '.', '_' and '-', at most 128, not starting with '.'", name))
		return
	}
	p, _ := PrincipalFrom(r.Context())
	files, err := f.Fixture(r.Context(), p, session, name)
	if errors.Is(err, loop.ErrNoSuchRun) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if code, msg, serr := s.refusal(p, access.Read, session, err); code != 0 {
		if serr != nil {
			s.writeStoreError(w, r, code, msg, serr)
		} else {
			writeError(w, code, msg)
		}
		return
	}
	dir := name
	if dir == "" {
		dir = folderName(session)
	}
	body, err := zipFixture(dir, files)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", `attachment; filename="`+dir+`.zip"`)
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

// zipFixture is the fixture's files in a zip archive, under dir/.
func zipFixture(dir string, files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: dir + "/" + n, Method: zip.Deflate, Modified: time.Now().UTC()})
		if err == nil {
			_, err = fw.Write(files[n])
		}
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainName reports whether s is safe as a directory in an archive and a file name in a
// header: letters, digits, '.', '_' and '-', at most 128, not "." or "..", not hidden.
func plainName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// folderName is a session id made a plain name (plainName): every other character
// becomes '_', a leading '.' too; cut to 128 bytes.
func folderName(session string) string {
	var b strings.Builder
	for _, c := range session {
		if b.Len() >= 128 {
			break
		}
		if c < 128 && plainName(string(c)) || c == '.' && b.Len() > 0 {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "session"
	}
	return b.String()
}
