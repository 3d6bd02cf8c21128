package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// Runner runs the loop; host.(*Host).Runner() is one.
type Runner interface {
	RunWith(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error)
}

// RunArgs are a run job's arguments. Session and Run are the input's ids and the job's
// unique key: River inserts a job only if no job of the same (session, run id) exists,
// so the decision that a run id is new is one INSERT in PostgreSQL, not a read on each
// node followed by an enqueue (two nodes would both read "new" and both enqueue). Input
// is the loop.RunInput, sealed with the store's keys, and dropped once the job has ended
// (atrest.go).
type RunArgs struct {
	Session string          `json:"session" river:"unique"`
	Run     string          `json:"run" river:"unique"`
	Input   json.RawMessage `json:"input,omitempty"`
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return "agenthost_run" }

// Options configure a Cluster.
type Options struct {
	// URL is the PostgreSQL database of the sessions (the [store] url).
	URL string
	// Runner executes runs; required when Workers > 0.
	Runner Runner
	// Workflows executes workflow runs (workflow.go); without it this node's workers
	// take no workflow jobs.
	Workflows WorkflowRunner
	// Schedules fires schedules' ticks (schedule.go); without it this node's workers
	// take no schedule jobs.
	Schedules ScheduleFirer
	// Store is the session store (to tell a first attempt from a retry). When it seals
	// (store/postgres with keys), the jobs' payloads are sealed with its key ring.
	Store loop.SessionStore
	// Workers is how many runs this node executes at once; 0 only enqueues.
	Workers int
	// RescueAfter is how long a job may run on one worker; default 10 minutes. River's
	// rescuer hands a job running longer to another worker (its worker is presumed
	// dead), and the worker itself stops the run then (River's job timeout: a job
	// without one is never rescued), so a longer run continues in a new attempt from
	// its stored session. A live run is never run twice: a retry that finds the
	// session's lease held waits (JobSnooze).
	RescueAfter time.Duration
	Log         *slog.Logger // River's and the cluster's warnings
	// RunLog receives one "run finished" record per run this node executes, as the HTTP
	// server's log does for the runs it executes itself (nil: none).
	RunLog *slog.Logger
}

// Cluster enqueues runs and, with workers, executes them.
type Cluster struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	opts   Options
	keys   *seal.Keys // the store's: seals the jobs' payloads (atrest.go)
}

// New connects, migrates River's tables (River's own migrations) and, with workers,
// starts working.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	pool, err := pgxpool.New(ctx, opts.URL)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{pool: pool, opts: opts, keys: keysOf(opts.Store)}
	if err := c.start(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	driver := riverpgxv5.New(c.pool)
	if err := c.migrate(ctx, driver); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	cfg := &river.Config{Logger: c.opts.Log}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if c.opts.Workers > 0 {
		if c.opts.Runner == nil || c.opts.Store == nil {
			return errors.New("workers need a runner and a store")
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, &runWorker{c: c})
		if c.opts.Workflows != nil {
			river.AddWorker(workers, &workflowWorker{c: c})
		}
		if c.opts.Schedules != nil {
			river.AddWorker(workers, &scheduleWorker{c: c})
		}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.opts.Workers}}
		cfg.RescueStuckJobsAfter = c.opts.RescueAfter
		if cfg.RescueStuckJobsAfter <= 0 {
			cfg.RescueStuckJobsAfter = 10 * time.Minute
		}
		cfg.JobTimeout = cfg.RescueStuckJobsAfter
		cfg.FetchPollInterval = 200 * time.Millisecond
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return err
	}
	c.client = client
	if c.opts.Workers > 0 {
		// Not ctx: its end (a signal) would be a hard stop, cancelling the runs at once;
		// Stop lets them finish first, and Close cancels what is left.
		return client.Start(context.WithoutCancel(ctx))
	}
	return nil
}

// migrate applies River's migrations, one node at a time (nodes that start together
// would race on CREATE TABLE), then installs the trigger that prunes ended jobs'
// payloads (atrest.go).
func (c *Cluster) migrate(ctx context.Context, driver *riverpgxv5.Driver) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const lock = 0x72697665722d6167 // "river-ag"
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(lock)); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(lock))
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	if _, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, pruneSQL); err != nil {
		return fmt.Errorf("the trigger pruning ended jobs: %w", err)
	}
	return nil
}

// Stop stops taking jobs and lets the runs this node executes finish, for up to grace;
// then it cancels those still going: each stores its end as aborted and its job is
// retried by River on another node, which continues the session from what was stored
// (the tool calls whose results were stored do not run again). A node that only
// enqueues has nothing to stop.
func (c *Cluster) Stop(grace time.Duration) error {
	if c.opts.Workers == 0 {
		return nil
	}
	soft, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if grace > 0 && c.client.Stop(soft) == nil {
		return nil
	}
	hard, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return c.client.StopAndCancel(hard)
}

// stopTimeout bounds the end of a Stop after its grace: the cancelled runs storing their
// ends, River recording their jobs as retryable.
const stopTimeout = 15 * time.Second

// Close stops working (runs in progress are cancelled: River retries them) and
// disconnects.
func (c *Cluster) Close(ctx context.Context) error {
	var err error
	if c.opts.Workers > 0 {
		err = c.client.StopAndCancel(ctx)
	}
	c.pool.Close()
	return err
}

// Submit enqueues a run, unless a job for the same (session, run id) exists in any
// state: then it enqueues nothing and returns an error wrapping loop.ErrRunExists. Of
// two nodes submitting one run at once, exactly one succeeds (River's unique index on
// the job's key decides). A job is kept until River's cleaner removes it (a day after
// it ended); by then the run it started is in the store's runs, which the caller
// checks too.
func (c *Cluster) Submit(ctx context.Context, in loop.RunInput) error {
	payload, err := c.sealRun(in)
	if err != nil {
		return fmt.Errorf("enqueue run %q: %w", in.RunID, err)
	}
	res, err := c.insert(ctx, RunArgs{Session: in.SessionID, Run: in.RunID, Input: payload}, &river.InsertOpts{
		MaxAttempts: 5,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: rivertype.JobStates()},
	})
	if err != nil {
		return fmt.Errorf("enqueue run %q: %w", in.RunID, err)
	}
	if res.UniqueSkippedAsDuplicate {
		return fmt.Errorf("run %q on session %q: %w", in.RunID, in.SessionID, loop.ErrRunExists)
	}
	return nil
}

// Done reports whether the run's latest job has finished for good (completed,
// cancelled or discarded): a stream of its events can end. Jobs are looked up by
// (session, run id), their unique key: run ids are unique only per session, and another
// session's job with the same run id says nothing about this run.
func (c *Cluster) Done(ctx context.Context, session, runID string) (bool, error) {
	return c.latestDone(ctx, "agenthost_run", "session", session, runID)
}

// latestDone reports whether the latest job of kind whose args have key = value and run
// = runID has finished for good (completed, cancelled or discarded); no job is done.
func (c *Cluster) latestDone(ctx context.Context, kind, key, value, runID string) (bool, error) {
	var state string
	err := c.pool.QueryRow(ctx, `SELECT state FROM river_job WHERE kind = $1 AND args->>$2 = $3
		AND args->>'run' = $4 ORDER BY id DESC LIMIT 1`, kind, key, value, runID).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, queueUnavailable(err)
	}
	switch rivertype.JobState(state) {
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return true, nil
	}
	return false, nil
}

// unfinished are the job states of a run that may still execute.
const unfinished = `state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`

// Abort cancels the unfinished job of the session's run, wherever it runs. It reports
// whether there was one. The session is part of the key: an abort for one session's
// run must not reach another session's run that happens to share its id. A run whose
// end is stored (ended.go) is not in progress, whatever its job's state: nothing is
// cancelled and Abort reports false.
func (c *Cluster) Abort(ctx context.Context, session, runID string) (bool, error) {
	if ended, err := c.storedEnd(ctx, session, runID); err != nil || ended {
		return false, err
	}
	var id int64
	err := c.pool.QueryRow(ctx, `SELECT id FROM river_job WHERE kind = 'agenthost_run' AND args->>'session' = $1
		AND args->>'run' = $2 AND `+unfinished+` ORDER BY id DESC LIMIT 1`, session, runID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = c.client.JobCancel(ctx, id)
	return err == nil, err
}

// Sessions lists the sessions whose run of the id is in progress: an unfinished job and
// no stored end (ended.go). How an abort that names only a run id (the old route) finds
// its run, and tells when the id is ambiguous: a run that ended on one session while
// River had not yet marked its job completed does not make the id ambiguous.
func (c *Cluster) Sessions(ctx context.Context, runID string) ([]string, error) {
	rows, err := c.pool.Query(ctx, `SELECT DISTINCT args->>'session' FROM river_job WHERE kind = 'agenthost_run'
		AND args->>'run' = $1 AND `+unfinished+` ORDER BY 1`, runID)
	if err != nil {
		return nil, err
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	live := sessions[:0]
	for _, session := range sessions {
		ended, err := c.storedEnd(ctx, session, runID)
		if err != nil {
			return nil, err
		}
		if !ended {
			live = append(live, session)
		}
	}
	return live, nil
}

// runWorker executes run jobs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	c *Cluster
}

// Work runs the job's input, or, when an earlier attempt already started it (its worker
// died), continues its session under the run id RUNID~N with no new input.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	in, err := w.c.openRun(job.Args)
	if err != nil {
		return river.JobCancel(err) // never retried: the same payload does not open again
	}
	runs, err := w.c.opts.Store.Runs(ctx, in.SessionID)
	if err != nil {
		return w.c.afterStore(ctx, fmt.Errorf("run %s: %w", in.RunID, err))
	}
	if r, ended := runEnded(runs, job.Args.Run); ended { // a late attempt (ended.go)
		w.c.log().Warn("cluster: the run has ended: its job completes without touching the session", "session", in.SessionID, "run", r.ID, "status", r.Status)
		return nil
	}
	attempts := 0
	for _, r := range runs {
		if r.ID == in.RunID || strings.HasPrefix(r.ID, in.RunID+"~") {
			attempts++
		}
	}
	if attempts > 0 {
		in.RunID = fmt.Sprintf("%s~%d", job.Args.Run, attempts+1)
		in.Messages = nil
	}
	res, err := w.c.opts.Runner.RunWith(ctx, in, nil)
	if l := w.c.opts.RunLog; l != nil && res.Status != "" {
		l.LogAttrs(ctx, slog.LevelInfo, "run finished", slog.String("session", in.SessionID), slog.String("run", in.RunID),
			slog.String("status", string(res.Status)), slog.String("reason", string(res.Reason)),
			slog.Int("prompt_tokens", res.Usage.PromptTokens), slog.Int("completion_tokens", res.Usage.CompletionTokens),
			slog.Float64("cost_usd", res.Usage.CostUSD), slog.Int("attempt", job.Attempt))
	}
	var over *loop.OverloadError
	switch {
	case errors.Is(err, loop.ErrSessionBusy):
		return river.JobSnooze(time.Second) // a live run holds the session: wait, not a failure
	case errors.As(err, &over):
		// The node's admission ([admission]) refused it before it started: the job waits
		// in River's queue, which is the cluster's queue, for as long as the refusal
		// asks, never dropped (it has no stored end for endStored to find) nor failed.
		w.c.log().Info("cluster: the run waits for admission", "session", in.SessionID, "run", in.RunID, "reason", over.Reason)
		return river.JobSnooze(over.RetryAfter)
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		return river.JobCancel(fmt.Errorf("run %s aborted", in.RunID)) // an abort: never retried
	case ctx.Err() != nil:
		return fmt.Errorf("run %s stopped: %w", in.RunID, context.Cause(ctx)) // shutdown: River retries it
	}
	// The job is done once the run's end (even a failure) is in the store; a run whose
	// end could not be stored (the database went away) is retried (outage.go).
	return w.endStored(ctx, in.SessionID, in.RunID, err)
}
