package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/workflow"
	"github.com/spf13/cobra"
)

// exitWaiting is a workflow run that stopped at an approval step: neither failed nor
// done; `workflow run NAME --run-id ID --approve STEP` continues it.
const exitWaiting = 3

func newWorkflowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "List and run the manifest's declared workflows ([workflows.NAME] tables)",
	}
	cmd.AddCommand(newWorkflowListCmd(), newWorkflowRunCmd())
	return cmd
}

func newWorkflowListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the declared workflows with their steps",
		Example: `  agenthost workflow list`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
			if err != nil {
				return err
			}
			names := m.WorkflowNames()
			if len(names) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no workflows (declare them in [workflows.NAME] tables of the manifest)")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTEPS\tDESCRIPTION")
			for _, n := range names {
				w, _ := m.Workflow(n)
				fmt.Fprintf(tw, "%s\t%s\t%s\n", n, strings.Join(w.StepIDs(), ","), w.Def.Description)
			}
			return tw.Flush()
		},
	}
}

func newWorkflowRunCmd() *cobra.Command {
	var input, runID string
	var approve, reject []string
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run (or resume) a workflow; prints each step's progress to stderr and the result as JSON",
		Long: `Run a declared workflow. --input gives its inputs as JSON ("-" reads stdin); they are
checked against the workflow's inputs schema. Step progress goes to stderr; the result
({"workflow","run_id","status","outputs",...}) to stdout.

--run-id names the run: a new id starts one, a stored one resumes it without running a
finished step again (after a crash, Ctrl-C, a failure, or to decide an approval step
with --approve STEP / --reject STEP).

Exit status: 0 completed, 1 failed or aborted, 2 usage or manifest error,
3 waiting for an approval (resume with --approve or --reject).`,
		Example: `  agenthost workflow run pipeline --input '{"path":"/data/sales.txt"}'
  echo '{"path":"/data/sales.txt"}' | agenthost workflow run pipeline --input - --run-id nightly-1
  agenthost workflow run pipeline --run-id nightly-1 --approve publish`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
			if err != nil {
				return err
			}
			w, ok := m.Workflow(args[0])
			if !ok {
				return usage(fmt.Errorf("no workflow %q (workflows: %s)", args[0], strings.Join(m.WorkflowNames(), ", ")))
			}
			in := workflow.RunInput{RunID: runID, Approvals: map[string]workflow.Decision{}}
			if input == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return failed(fmt.Errorf("read inputs from stdin: %w", err))
				}
				input = string(bytes.TrimSpace(b))
			}
			if input != "" {
				if !json.Valid([]byte(input)) {
					return usage(errors.New("--input is not JSON"))
				}
				in.Inputs = json.RawMessage(input)
			}
			for _, s := range approve {
				in.Approvals[s] = workflow.Decision{Approved: true}
			}
			for _, s := range reject {
				in.Approvals[s] = workflow.Decision{Approved: false}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Loaded: m, NoProvider: !w.UsesAgent(), Stderr: providerLog(cmd)})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			res, err := h.Workflows().Run(ctx, w, in, func(e workflow.Event) { progress(cmd.ErrOrStderr(), e) })
			if errors.Is(err, workflow.ErrInputs) {
				return usage(err)
			}
			if err != nil {
				return failed(err)
			}
			rec := res.Record
			out := map[string]any{"workflow": rec.Workflow, "run_id": rec.RunID, "status": rec.Status, "outputs": rec.Outputs}
			if rec.Error != "" {
				out["error"] = rec.Error
			}
			if len(res.Waiting) > 0 {
				out["waiting"] = res.Waiting
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				return failed(err)
			}
			switch rec.Status {
			case workflow.RunCompleted:
				return nil
			case workflow.RunInterrupted:
				return &exitError{code: exitWaiting, err: fmt.Errorf("waiting for approval: %s (%s)", strings.Join(res.Waiting, ", "), resumeHint(rec.Workflow, rec.RunID, res.Waiting))}
			}
			return failed(fmt.Errorf("workflow %s run %s %s: %s", rec.Workflow, rec.RunID, rec.Status, rec.Error))
		},
	}
	cmd.Flags().StringVar(&input, "input", "", `the inputs as JSON, or "-" for stdin`)
	cmd.Flags().StringVar(&runID, "run-id", "", "the run's id: a stored one resumes it (default: a new one)")
	cmd.Flags().StringSliceVar(&approve, "approve", nil, "approve this waiting approval step (repeatable)")
	cmd.Flags().StringSliceVar(&reject, "reject", nil, "reject this waiting approval step (repeatable)")
	return cmd
}

// progress prints one line per step event.
func progress(w io.Writer, e workflow.Event) {
	switch e.Type {
	case workflow.EventWorkflowStarted:
		verb := "started"
		if e.Resumed {
			verb = "resumed"
		}
		fmt.Fprintf(w, "workflow %s run %s %s\n", e.Workflow, e.RunID, verb)
	case workflow.EventStepStarted:
		if e.Items > 0 {
			fmt.Fprintf(w, "▸ %s (%s, %d items)\n", e.Step, e.Kind, e.Items)
			return
		}
		fmt.Fprintf(w, "▸ %s (%s)\n", e.Step, e.Kind)
	case workflow.EventStepFinished:
		mark := map[string]string{workflow.StatusOK: "✓", workflow.StatusSkipped: "–", workflow.StatusRejected: "–"}[e.Status]
		if mark == "" {
			mark = "✗"
		}
		line := fmt.Sprintf("%s %s %s", mark, e.Step, e.Status)
		if e.Status == workflow.StatusOK {
			b, _ := json.Marshal(e.Output)
			line += " " + clip(string(b), 200)
		} else if e.Error != "" {
			line += ": " + e.Error
		}
		fmt.Fprintln(w, line)
	case workflow.EventStepWaiting:
		fmt.Fprintf(w, "? %s waiting for approval: %s\n", e.Step, e.Prompt)
	case workflow.EventWorkflowFinished:
		fmt.Fprintf(w, "workflow %s run %s %s\n", e.Workflow, e.RunID, e.Status)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// resumeHint is the command that continues a run waiting for approval, with the step
// named when there is one ("--approve publish"), else the steps to choose from.
func resumeHint(workflow, runID string, waiting []string) string {
	resume := fmt.Sprintf("agenthost workflow run %s --run-id %s", workflow, runID)
	if len(waiting) == 1 {
		return fmt.Sprintf("resume with: %s --approve %s, or --reject %s", resume, waiting[0], waiting[0])
	}
	return fmt.Sprintf("resume with: %s --approve STEP or --reject STEP, STEP one of %s", resume, strings.Join(waiting, ", "))
}
