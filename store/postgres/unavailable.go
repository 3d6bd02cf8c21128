package postgres

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err says the database could not be reached or went away:
// a failed connection, a network error, a pooled connection found closed (the server
// went away since it was last used; a pooled connection cut mid-query answers an unexpected
// EOF, issue 47), or PostgreSQL's connection exception and
// operator intervention classes (08, 57P: shutting down, starting up). Such a failure
// is the storage's, not the write's: the same write may succeed once the server is back.
func Unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &pe):
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return false
}

// unavailableError marks an Unreachable error with StoreUnavailable, which the loop
// (its wait for a store, rule L23) and the server (503 with Retry-After) look for
// without importing this package.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string          { return e.err.Error() }
func (e *unavailableError) Unwrap() error          { return e.err }
func (e *unavailableError) StoreUnavailable() bool { return true }

// unavailable marks err when the database is unreachable, and returns it unchanged
// otherwise (or marked already). Only the door (door.go) calls it, on every error a
// statement returns: the errors of an ordinary run (no row, a transaction's rollback
// after its commit) are let through first without the checks' allocations.
func unavailable(err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, pgx.ErrTxClosed) || !Unreachable(err) {
		return err
	}
	if u := new(unavailableError); errors.As(err, &u) {
		return err
	}
	return &unavailableError{err}
}
