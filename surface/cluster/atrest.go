package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/postgres"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/workflow"
)

// Nothing in clear at rest (issue 46). A job's arguments are its identifiers (the
// session or workflow, the run id: its unique key, and what Done, Abort and Sessions
// find it by) and one payload: the run's input (prompt, messages, state, client tools)
// or the workflow's inputs and decisions, sealed with the store's key ring and bound to
// the job (seal.JobAAD), so River's table holds no more in clear than the store's own
// tables do. Without keys the payload is plain, as every stored value is then.
//
// A payload is needed only while the job may still run: a trigger on River's table
// (installed after River's migrations, under the same lock) drops it in the very update
// that finalizes the job — completed, cancelled or discarded, by a worker, an abort or
// River's rescuer alike — so a finished job keeps only its identifiers. Deleting a
// session (users erase, sessions delete, the API, retention) deletes its jobs in the
// store's own transaction (postgres.OnDeleteSession); a job running now makes the
// session busy.

// keyed is a store that seals with a key ring (store/postgres).
type keyed interface{ Keys() *seal.Keys }

// keysOf is the ring of the store the jobs' payloads are sealed with; nil seals nothing.
func keysOf(st loop.SessionStore) *seal.Keys {
	if k, ok := st.(keyed); ok {
		return k.Keys()
	}
	return nil
}

// The fields of a job's args that hold a payload: dropped when the job ends. "inputs" and
// "approvals" are a workflow job's plain fields from before payloads were sealed.
const pruneFields = `'input' - 'payload' - 'inputs' - 'approvals'`

// pruneSQL installs the trigger (again: River's migrations may have rebuilt the table),
// and prunes the jobs that ended before it existed. One Exec without arguments runs the
// statements as one transaction (PostgreSQL's simple protocol).
const pruneSQL = `
CREATE OR REPLACE FUNCTION agenthost_prune_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.args := NEW.args - ` + pruneFields + `;
	RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS agenthost_prune_job ON river_job;
CREATE TRIGGER agenthost_prune_job BEFORE INSERT OR UPDATE ON river_job FOR EACH ROW
	WHEN (NEW.kind IN ('agenthost_run', 'agenthost_workflow') AND NEW.state IN ('completed', 'cancelled', 'discarded')
		AND (NEW.args ? 'input' OR NEW.args ? 'payload' OR NEW.args ? 'inputs' OR NEW.args ? 'approvals'))
	EXECUTE FUNCTION agenthost_prune_job();
UPDATE river_job SET args = args - ` + pruneFields + ` WHERE kind IN ('agenthost_run', 'agenthost_workflow')
	AND state IN ('completed', 'cancelled', 'discarded')
	AND (args ? 'input' OR args ? 'payload' OR args ? 'inputs' OR args ? 'approvals');`

func init() { postgres.OnDeleteSession(deleteSessionJobs) }

// deleteSessionJobs deletes a session's run jobs, in the transaction deleting the
// session. A job running now (its worker may be about to take the session's lease) makes
// the session busy: the deletion is refused as a session with a live run is.
func deleteSessionJobs(ctx context.Context, tx pgx.Tx, session string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return err // a database no cluster ever used
	}
	if _, err := tx.Exec(ctx, `DELETE FROM river_job WHERE kind = 'agenthost_run' AND args->>'session' = $1 AND state <> 'running'`, session); err != nil {
		return fmt.Errorf("delete the session's jobs: %w", err)
	}
	var running bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = 'agenthost_run' AND args->>'session' = $1)`, session).Scan(&running); err != nil {
		return fmt.Errorf("delete the session's jobs: %w", err)
	}
	if running {
		return fmt.Errorf("a job of the session is running: %w", loop.ErrSessionBusy)
	}
	return nil
}

// ErrPayloadGone is a run job without its input: it ended (and was pruned) and was
// retried by hand.
var ErrPayloadGone = errors.New("the job's payload is gone (pruned when the job ended)")

// sealRun is a run job's payload.
func (c *Cluster) sealRun(in loop.RunInput) (json.RawMessage, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return c.keys.Seal(b, seal.JobAAD(RunArgs{}.Kind(), in.SessionID, in.RunID)), nil
}

// openRun is the run input a job's payload holds.
func (c *Cluster) openRun(a RunArgs) (loop.RunInput, error) {
	var in loop.RunInput
	if len(a.Input) == 0 || string(a.Input) == "null" {
		return in, ErrPayloadGone
	}
	b, err := c.keys.Open(a.Input, seal.JobAAD(a.Kind(), a.Session, a.Run))
	if err != nil {
		return in, fmt.Errorf("run %s: its input: %w", a.Run, err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("run %s: its input: %w", a.Run, err)
	}
	if in.SessionID != a.Session || in.RunID != a.Run {
		return in, fmt.Errorf("run %s: its input names session %q run %q", a.Run, in.SessionID, in.RunID)
	}
	// JSON turns a nil RawMessage into "null": back to nil, as the caller gave it.
	for _, raw := range []*json.RawMessage{&in.OutputSchema, &in.State} {
		if string(*raw) == "null" {
			*raw = nil
		}
	}
	return in, nil
}

// workflowPayload is what a workflow job carries besides its identifiers.
type workflowPayload struct {
	Inputs    json.RawMessage              `json:"inputs,omitempty"`
	Approvals map[string]workflow.Decision `json:"approvals,omitempty"`
}

func (c *Cluster) sealWorkflow(name string, in workflow.RunInput) (json.RawMessage, error) {
	b, err := json.Marshal(workflowPayload{Inputs: in.Inputs, Approvals: in.Approvals})
	if err != nil {
		return nil, err
	}
	return c.keys.Seal(b, seal.JobAAD(WorkflowArgs{}.Kind(), name+"/"+in.Owner, in.RunID)), nil
}

// openWorkflow is the run input a workflow job holds: its sealed payload, or the plain
// fields of a job queued before payloads were sealed. A job without either resumes its
// run with no new inputs or decisions (the run keeps the inputs it started with).
func (c *Cluster) openWorkflow(a WorkflowArgs) (workflow.RunInput, error) {
	in := workflow.RunInput{RunID: a.Run, Owner: a.Owner, Inputs: a.Inputs, Approvals: a.Approvals}
	if len(a.Payload) > 0 && string(a.Payload) != "null" {
		b, err := c.keys.Open(a.Payload, seal.JobAAD(a.Kind(), a.Workflow+"/"+a.Owner, a.Run))
		if err != nil {
			return in, fmt.Errorf("workflow %s run %s: its payload: %w", a.Workflow, a.Run, err)
		}
		var p workflowPayload
		if err := json.Unmarshal(b, &p); err != nil {
			return in, fmt.Errorf("workflow %s run %s: its payload: %w", a.Workflow, a.Run, err)
		}
		in.Inputs, in.Approvals = p.Inputs, p.Approvals
	}
	if string(in.Inputs) == "null" {
		in.Inputs = nil
	}
	return in, nil
}
