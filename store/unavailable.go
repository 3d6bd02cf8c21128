package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"modernc.org/sqlite"
)

// ErrDatabaseGone is wrapped by every write after the database file was deleted or
// replaced under the process. SQLite keeps writing to the file it opened: deleted, its
// inode lives on until the process exits; replaced, the path names another file. Either
// way every write "succeeded" and was lost at the next start (issue 29), so the store
// compares the path with the file it opened before each commit and each read, and
// refuses both: a read would serve what the next start will not have.
var ErrDatabaseGone = errors.New("the session database file was deleted or replaced")

// UnavailableError is a failure of the storage rather than of the request: the file
// gone, the disk full, an I/O error, the database locked past busy_timeout. A server
// answers it with 503 and Retry-After, not 400; it finds it by the method
// StoreUnavailable (errors.As with an interface), so it need not import this package.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string          { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error          { return e.Err }
func (e *UnavailableError) StoreUnavailable() bool { return true }

// unavailable marks err as the storage's failure when it is one: SQLite's result codes
// for a busy, full, read-only, unreadable or vanished database. Constraint violations and
// the store's own refusals (a sequence gap, a busy session) stay the caller's.
func unavailable(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code
	case 5, 6, 7, 8, 10, 13, 14, 15: // BUSY LOCKED NOMEM READONLY IOERR FULL CANTOPEN PROTOCOL
		return &UnavailableError{err}
	}
	return err
}

// fileWatch says whether the path still names the file the store opened.
type fileWatch struct {
	path   string
	opened os.FileInfo // the file as opened; nil for an in-memory database
	log    *slog.Logger

	mu   sync.Mutex
	gone bool // the last check failed (logged once per disappearance)
}

func newFileWatch(path string, log *slog.Logger) (*fileWatch, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return &fileWatch{path: path, opened: fi, log: log}, nil
}

// check is nil while the path names the opened file, and otherwise an
// *UnavailableError wrapping ErrDatabaseGone, logged the first time. A stat costs
// microseconds; a commit costs a WAL write and a read a query, so every one checks.
func (w *fileWatch) check() error {
	fi, err := os.Stat(w.path)
	var what string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what = "no longer exists"
	case err != nil:
		what = "cannot be checked: " + err.Error()
	case !os.SameFile(fi, w.opened):
		what = "is another file now"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if what == "" {
		w.gone = false // put back (renamed back): writes reach the file again
		return nil
	}
	gone := &UnavailableError{fmt.Errorf("%w: %s %s; no read or write is accepted until agenthost is restarted",
		ErrDatabaseGone, w.path, what)}
	if !w.gone {
		w.gone = true
		w.log.Error("session store: refusing reads and writes", "path", w.path, "error", gone.Error())
	}
	return gone
}
