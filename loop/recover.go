package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SessionInfo summarises a stored session.
type SessionInfo struct {
	ID      string    `json:"id"`
	Entries int64     `json:"entries"`
	Runs    int64     `json:"runs"`
	Updated time.Time `json:"updated"`
}

// SessionLister is an optional SessionStore extension: a store that can list its
// sessions, most recently updated first.
type SessionLister interface {
	Sessions(ctx context.Context) ([]SessionInfo, error)
}

// SessionDeleter is an optional SessionStore extension: a store that can delete a
// session (its entries and runs). It refuses, with ErrSessionBusy, a session whose run
// holds a lease.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, session string) error
}

// ErrCannotList is returned by ListSessions for a store that is no SessionLister.
var ErrCannotList = errors.New("the session store cannot list its sessions")

// ListSessions lists st's sessions when it is a SessionLister.
func ListSessions(ctx context.Context, st SessionStore) ([]SessionInfo, error) {
	l, ok := st.(SessionLister)
	if !ok {
		return nil, fmt.Errorf("%T: %w", st, ErrCannotList)
	}
	return l.Sessions(ctx)
}

// RecoverRuns ends the runs that dead processes left open (a run record with no
// status): for each it appends run_finished{aborted, cancelled} to the session and saves
// the run as aborted, so the session reads as if the run had been aborted and a new run
// can continue it (the loop executes any tool call left without a result, rule L14).
//
// With a Leaser store it first takes each such session's lease, so a run another live
// process is writing is left alone (its session is skipped) and two recoveries never
// close one run twice. Without leases every open run counts as dead, so call it only
// before any run of this store starts. A store that cannot list its sessions has
// nothing to recover. It reports how many runs it ended.
func RecoverRuns(ctx context.Context, st SessionStore) (int, error) {
	sessions, err := ListSessions(ctx, st)
	if errors.Is(err, ErrCannotList) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("recover runs: %w", err)
	}
	n := 0
	for _, si := range sessions {
		runs, err := st.Runs(ctx, si.ID)
		if err != nil {
			return n, fmt.Errorf("recover runs of session %q: %w", si.ID, err)
		}
		if !slices.ContainsFunc(runs, func(r RunRecord) bool { return r.Status == "" }) {
			continue
		}
		lease, err := acquireLease(ctx, st, si.ID, "")
		if errors.Is(err, ErrSessionBusy) {
			continue // a live process owns it: its run is not dead
		}
		if err != nil {
			return n, fmt.Errorf("recover runs: %w", err)
		}
		fenced := ctx
		if lease != nil {
			fenced = WithFence(ctx, *lease) // a recovery paused past its lease writes nothing (fence.go)
		}
		k, err := closeDeadRuns(fenced, st, si.ID)
		n += k
		if lease != nil {
			dropOwn(*lease)
			_ = st.(Leaser).ReleaseLease(ctx, *lease)
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// closeDeadRuns closes the open runs of a session the caller owns; it re-reads them
// under the lease, since another recovery may have closed them meanwhile.
func closeDeadRuns(ctx context.Context, st SessionStore, session string) (int, error) {
	runs, err := st.Runs(ctx, session)
	if err != nil {
		return 0, fmt.Errorf("recover runs of session %q: %w", session, err)
	}
	n := 0
	for _, r := range runs {
		if r.Status != "" {
			continue
		}
		if err := closeDeadRun(ctx, st, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// closeDeadRun stores the end of a run whose process died: run_finished{aborted,
// cancelled} after the run's last event, and the run record as aborted.
func closeDeadRun(ctx context.Context, st SessionStore, run RunRecord) error {
	entries, err := st.Load(ctx, run.SessionID)
	if err != nil {
		return fmt.Errorf("recover run %q: load session %q: %w", run.ID, run.SessionID, err)
	}
	var evSeq int64
	agent := ""
	for _, e := range entries {
		if e.Kind == EntryEvent && e.Event != nil && e.Event.RunID == run.ID {
			evSeq, agent = max(evSeq, e.Event.Seq), e.Event.Agent
		}
	}
	now := time.Now().UTC()
	ev := &Event{Seq: evSeq + 1, Time: now, SessionID: run.SessionID, RunID: run.ID, Agent: agent,
		Type: EventRunFinished, Data: &RunFinishedData{Status: StatusAborted, Reason: ReasonCancelled, Usage: run.Usage}}
	entry := Entry{Seq: int64(len(entries)) + 1, RunID: run.ID, Time: now, Kind: EntryEvent, Event: ev}
	if err := st.Append(ctx, run.SessionID, entry); err != nil {
		return fmt.Errorf("recover run %q: %w", run.ID, err)
	}
	run.Status, run.Reason, run.Ended = StatusAborted, ReasonCancelled, now
	if err := st.SaveRun(ctx, run); err != nil {
		return fmt.Errorf("recover run %q: %w", run.ID, err)
	}
	return nil
}
