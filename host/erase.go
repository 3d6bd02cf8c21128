package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// ActionUserErase is the audit record of an erasure.
const ActionUserErase = "user.erase"

// EraseResult is what EraseUser did (or, dry, would do).
type EraseResult struct {
	User     string   `json:"user"`
	Sessions []string `json:"sessions"`       // deleted (with their runs and feedback)
	Busy     []string `json:"busy,omitempty"` // the user's, but a run is in progress: kept
	Memories int      `json:"memories"`
	// CachedResults are the tool results their runs left in the tool-result cache.
	CachedResults int `json:"cached_results"`
	// Credentials are the user's MCP tokens and secrets (usercreds.go, usersecrets.go).
	Credentials int `json:"credentials"`
}

// EraseUser deletes what the store holds of a user: every session they own or one of
// whose runs was theirs (run_started names the user's id; a session is a conversation,
// so it goes whole, with its runs and feedback), and their memories and preferences.
// Erasure is by identity: user is resolved once (ResolveUser: a present user's name is
// their id; an id, a removed user's too, is itself), so erasing "ana" never reaches the
// sessions of an earlier account that was called ana. A session whose run
// is in progress is kept and reported. The erasure itself is recorded in the audit log,
// which keeps the user's name in its earlier records: the log is append-only and its
// chain would break (SECURITY.md).
func (h *Host) EraseUser(ctx context.Context, user, actor string, dryRun bool) (EraseResult, error) {
	res := EraseResult{User: user, Sessions: []string{}}
	if user == "" {
		return res, errors.New("erase: a user name is required")
	}
	if err := loop.CheckUser(user); err != nil {
		return res, err
	}
	user, err := h.ResolveUser(ctx, user)
	if err != nil {
		return res, err
	}
	res.User = user
	sessions, err := h.Sessions(ctx)
	if err != nil {
		return res, err
	}
	for _, s := range sessions {
		theirs, err := h.sessionOf(ctx, s.ID, user)
		if err != nil {
			return res, err
		}
		if !theirs {
			continue
		}
		if dryRun {
			res.Sessions = append(res.Sessions, s.ID)
			continue
		}
		switch err := h.DeleteSession(ctx, s.ID, actor); {
		case errors.Is(err, loop.ErrSessionBusy):
			res.Busy = append(res.Busy, s.ID)
		case err != nil:
			return res, err
		default:
			res.Sessions = append(res.Sessions, s.ID)
		}
	}
	if ms, ok := h.Memory(); ok {
		if dryRun {
			all, err := ms.ListMemory(ctx, memory.Filter{User: user})
			if err != nil {
				return res, err
			}
			res.Memories = len(all)
		} else if res.Memories, err = ms.DeleteMemory(ctx, memory.Filter{User: user}); err != nil {
			return res, fmt.Errorf("erase memories: %w", err)
		}
	}
	if ur, ok := h.Store.(userResults); ok && !dryRun {
		if res.CachedResults, err = ur.DeleteUserResults(ctx, user); err != nil {
			return res, err
		}
	}
	if res.Credentials, err = h.eraseCredentials(ctx, user, dryRun); err != nil {
		return res, fmt.Errorf("erase credentials: %w", err)
	}
	if dryRun {
		return res, nil
	}
	return res, h.Audit(ctx, audit.Record{Action: ActionUserErase, Actor: actor, Target: "user:" + user,
		Detail: map[string]string{"sessions": strconv.Itoa(len(res.Sessions)), "busy": strconv.Itoa(len(res.Busy)), "memories": strconv.Itoa(res.Memories),
			"credentials": strconv.Itoa(res.Credentials)}})
}

// sessionOf reports whether the session is the user's: they own it, or a run of it was
// theirs.
func (h *Host) sessionOf(ctx context.Context, session, user string) (bool, error) {
	if as, ok := h.Access(); ok {
		owner, err := as.Owner(ctx, session)
		if err != nil || owner == user {
			return owner == user, err
		}
	}
	entries, err := h.Store.Load(ctx, session)
	if err != nil {
		return false, err
	}
	return runsFor(entries, user), nil
}

// runsFor reports whether a run of the session was the user's.
func runsFor(entries []loop.Entry, user string) bool {
	for _, e := range entries {
		if e.Kind != loop.EntryEvent || e.Event.Type != loop.EventRunStarted {
			continue
		}
		if d, ok := e.Event.Data.(*loop.RunStartedData); ok && d.User == user {
			return true
		}
	}
	return false
}

// forgetSession drops what the process holds of a deleted session in memory: the idle
// plugin instances kept for it (sandbox isolation "session"), whose globals and heap
// may hold its words, in the current plugins and in those a Reload retired while runs
// still used them; and what the surfaces registered with OnDeleteSession keep (the
// server's A2A tasks). SECURITY.md, "What erasure erases where".
func (h *Host) forgetSession(ctx context.Context, id string) {
	h.live.mu.Lock()
	for _, p := range h.plugins {
		p.ForgetSession(ctx, id)
	}
	for _, r := range h.live.retired {
		for _, p := range r.plugins {
			p.ForgetSession(ctx, id)
		}
	}
	h.live.mu.Unlock()
	h.forgetters.mu.Lock()
	fs := h.forgetters.fs
	h.forgetters.mu.Unlock()
	for _, f := range fs {
		f(ctx, id)
	}
}

type forgetters struct {
	mu sync.Mutex
	fs []func(ctx context.Context, session string)
}

// OnDeleteSession registers f, called with the id of every session the host deletes
// (DeleteSession: users erase, sessions delete, the API, retention), once the store has
// deleted it: a surface that keeps something of a session in memory (the server's A2A
// tasks) forgets it there.
func (h *Host) OnDeleteSession(f func(ctx context.Context, session string)) {
	h.forgetters.mu.Lock()
	defer h.forgetters.mu.Unlock()
	h.forgetters.fs = append(h.forgetters.fs, f)
}
