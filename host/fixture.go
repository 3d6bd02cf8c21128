package host

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/eval"
	"github.com/agenthost/agenthost/loop"
)

// Fixture is the session's last finished run as a replay fixture for p, who must be
// allowed to read the session: the files `sessions export ID --fixture DIR` writes
// (eval.Fixture: the eval case named name, or the session's id; the model's answers;
// the tools' results), by file name. A session p may not read and one that does not
// exist get the same answer (ErrNoSession); a session with no run to record (none
// finished, or no user message) is loop.ErrNoSuchRun, saying why.
func (d *Door) Fixture(ctx context.Context, p access.Principal, session, name string) (map[string][]byte, error) {
	if err := d.authorize(ctx, p, access.Read, session); err != nil {
		return nil, err
	}
	entries, err := d.h.Store.Load(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	if len(entries) == 0 {
		return nil, ErrNoSession
	}
	if name == "" {
		name = session
	}
	rec, err := eval.Record(name, entries)
	if err != nil {
		return nil, fmt.Errorf("%w to record: %w", loop.ErrNoSuchRun, err)
	}
	f := &eval.Fixture{}
	if err := f.Add(rec); err != nil {
		return nil, err
	}
	files, err := f.Files()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(files))
	for _, file := range files {
		out[file.Name] = file.Data
	}
	return out, nil
}
