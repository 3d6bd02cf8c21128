package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
)

// storeRetryAfter is the Retry-After of a 503 for a storage failure: long enough that
// clients do not hammer a full disk, short enough for a lock held past busy_timeout.
const storeRetryAfter = 10 // seconds

// storeUnavailable reports whether err is the storage's failure rather than the
// request's: the database file gone, the disk full, an I/O error. Stores mark such errors
// with a method (store.UnavailableError), found here by interface so that this package
// does not depend on a store.
func storeUnavailable(err error) bool {
	var u interface{ StoreUnavailable() bool }
	return errors.As(err, &u) && u.StoreUnavailable()
}

// writeStoreError answers a failed store call: 503 with Retry-After when the storage
// failed (and logged, since the operator must act: a full disk, a deleted file), 500
// otherwise. A full disk at a run's start used to answer 400, telling the client that
// its request was wrong.
func (s *Server) writeStoreError(w http.ResponseWriter, r *http.Request, fallback int, msg string, err error) {
	if !storeUnavailable(err) {
		writeError(w, fallback, msg)
		return
	}
	if s.opts.Log != nil {
		s.opts.Log.LogAttrs(r.Context(), slog.LevelError, "session store unavailable", slog.String("path", r.URL.Path),
			slog.String("error", err.Error()))
	}
	w.Header().Set("Retry-After", strconv.Itoa(storeRetryAfter))
	writeError(w, http.StatusServiceUnavailable, msg)
}
