package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// PruneResult is what Prune did, or with DryRun would do.
type PruneResult struct {
	Deleted []string // sessions deleted (or, dry, to delete)
	Busy    []string // sessions whose run is in progress: kept, pruned next time
}

// Prune deletes the sessions not updated since before (their entries, runs and
// feedback), keeping any whose run is in progress. With dryRun it only lists them.
// It is [store] retention's work, and "sessions prune".
func (h *Host) Prune(ctx context.Context, before time.Time, dryRun bool) (PruneResult, error) {
	var res PruneResult
	_, ok := h.Store.(loop.SessionDeleter)
	if !ok {
		return res, fmt.Errorf("the %s store cannot delete sessions", h.Manifest.Store.Kind)
	}
	sessions, err := h.Sessions(ctx)
	if err != nil {
		return res, err
	}
	for _, s := range sessions {
		if !s.Updated.Before(before) {
			continue
		}
		if dryRun {
			res.Deleted = append(res.Deleted, s.ID)
			continue
		}
		switch err := h.DeleteSession(ctx, s.ID, "retention"); {
		case errors.Is(err, loop.ErrSessionBusy):
			res.Busy = append(res.Busy, s.ID)
		case err != nil:
			return res, err
		default:
			res.Deleted = append(res.Deleted, s.ID)
		}
	}
	return res, nil
}
