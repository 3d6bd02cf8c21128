package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/loop"
)

// Per-user servers (auth = "per_user"): the server is reached with the calling user's
// own token, never the host's or another user's. The Server the host holds keeps no
// connection of its own: it offers the tools of its catalogue (what the server listed
// when a user last connected) and, on each call, uses the connection of the run's user
// (loop.CallInfo.User), opened on that user's first call with the token source the host
// gives for that user alone and kept until Close. A user with no token gets no call: the
// call ends with a loop.InputRequiredError carrying PerUser.Login's request (the login
// link), the run is interrupted, and the run resumed after the user connected calls
// the tool again.

// ErrNotConnected is what PerUser.Source returns for a user who holds no token (never
// connected, or disconnected): the call asks the user to connect.
var ErrNotConnected = errors.New("not connected")

// PerUser makes a server's connections per user.
type PerUser struct {
	// Tools is the catalogue: the tools the model sees (the allow and skip lists apply).
	Tools []Tool
	// Source is user's token source; ErrNotConnected when the user holds none.
	Source func(ctx context.Context, user string) (oauth2.TokenSource, error)
	// Login is the request that asks user to connect (its message carries the link).
	Login func(user string) loop.InputRequest
}

// startPerUser is Start for a per-user entry: no connection yet, the catalogue's tools.
func startPerUser(cfg Config) *Server {
	s := &Server{cfg: cfg, users: map[string]*Server{}}
	for _, t := range cfg.PerUser.Tools {
		if (len(cfg.Tools) > 0 && !slices.Contains(cfg.Tools, t.Name)) || slices.Contains(cfg.SkipTools, t.Name) {
			continue
		}
		s.tools = append(s.tools, t)
	}
	return s
}

// PerUserAuth says the server is reached with each calling user's own token.
func (s *Server) PerUserAuth() bool { return s.cfg.PerUser != nil }

// callAsUser calls tool over the connection of the run's user.
func (s *Server) callAsUser(ctx context.Context, tool string, args []byte) (loop.ToolResult, error) {
	info, _ := loop.CallInfoFrom(ctx)
	if info.User == "" {
		return loop.ErrorResult(fmt.Sprintf("Error: mcp server %q is reached with the calling user's own account, and this run has no user", s.cfg.Name)), nil
	}
	u, err := s.userServer(ctx, info.User)
	switch {
	case errors.Is(err, ErrNotConnected):
		return loop.ToolResult{}, &loop.InputRequiredError{Request: s.cfg.PerUser.Login(info.User)}
	case errors.Is(err, errClosed):
		return loop.ToolResult{}, err
	case err != nil:
		return loop.ErrorResult("Error: " + err.Error()), nil
	}
	res, err := u.Call(ctx, tool, args)
	if res.IsError && s.dropIfUnauthorized(info.User, u) { // an answer or a Failure, never an interrupt
		// The token no longer works (revoked, or its refresh refused): the user connects again.
		return loop.ToolResult{}, &loop.InputRequiredError{Request: s.cfg.PerUser.Login(info.User)}
	}
	return res, err
}

// userServer is user's connection, opened on first use (outside the lock: one user's
// slow sign-in does not hold up another's calls; of two opened at once, one is kept).
func (s *Server) userServer(ctx context.Context, user string) (*Server, error) {
	s.mu.Lock()
	u, closed := s.users[user], s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("mcp server %q is %w", s.cfg.Name, errClosed)
	}
	if u != nil {
		return u, nil
	}
	src, err := s.cfg.PerUser.Source(ctx, user)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.PerUser = nil
	cfg.OAuth = &OAuth{Source: src}
	u, err = Start(ctx, cfg)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) { // the stored token cannot be refreshed: connect again
			return nil, fmt.Errorf("%w: %v", ErrNotConnected, err)
		}
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch have := s.users[user]; {
	case s.closed:
		_ = u.Close()
		return nil, fmt.Errorf("mcp server %q is %w", s.cfg.Name, errClosed)
	case have != nil:
		_ = u.Close()
		return have, nil
	}
	s.users[user] = u
	return u, nil
}

// dropIfUnauthorized closes user's connection u when its token can no longer be had,
// so the next call asks the user to connect; it reports whether it did.
func (s *Server) dropIfUnauthorized(user string, u *Server) bool {
	src := u.cfg.OAuth.Source
	if _, err := src.Token(); err == nil {
		return false
	}
	s.mu.Lock()
	if s.users[user] == u {
		delete(s.users, user)
	}
	s.mu.Unlock()
	_ = u.Close()
	return true
}

// closeUsers closes every user's connection (Close holds s.mu).
func (s *Server) closeUsers() error {
	var errs []error
	for user, u := range s.users {
		errs = append(errs, u.Close())
		delete(s.users, user)
	}
	return errors.Join(errs...)
}
