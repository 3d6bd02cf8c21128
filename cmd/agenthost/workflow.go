package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/workflow"
	"github.com/spf13/cobra"
)

func newWorkflowCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workflow", Short: "List and run the manifest's workflows ([workflows.NAME])"}
	cmd.AddCommand(newWorkflowListCmd(), newWorkflowRunCmd())
	return cmd
}

func newWorkflowListCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{Use: "list", Short: "List the workflows with their steps", Args: cobra.NoArgs,
		Example: "  agenthost workflow list\n  agenthost workflow list --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPlugins(cmd, func(h *host.Host) error {
				type item struct {
					Name        string          `json:"name"`
					Description string          `json:"description,omitempty"`
					Steps       []workflow.Step `json:"steps"`
				}
				out := []item{}
				for _, name := range h.WorkflowNames() {
					d := h.Manifest.Workflows[name]
					out = append(out, item{name, d.Description, d.Steps})
				}
				if jsonOut {
					return printJSON(cmd, out)
				}
				if len(out) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no workflows")
				}
				for _, it := range out {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d steps", it.Name, len(it.Steps))
					if it.Description != "" {
						fmt.Fprintf(cmd.OutOrStdout(), " — %s", it.Description)
					}
					fmt.Fprintln(cmd.OutOrStdout())
				}
				return nil
			})
		}}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func newWorkflowRunCmd() *cobra.Command {
	var (
		input, runID, approve, provider, user string
		jsonOut                               bool
	)
	cmd := &cobra.Command{Use: "run NAME", Short: "Run a workflow, or resume one with --run ID", Args: cobra.ExactArgs(1),
		Long: `run runs the workflow NAME with --input (a JSON object, or - to read it from stdin) and
prints each step as it starts and ends, then the workflow's output as JSON. Every step is
stored as it starts and ends: a run stopped at any point (Ctrl-C, a crash, a kill) resumes
with --run ID, the id it printed first, without doing its finished steps again.

Exit status: 0 done, 1 a step failed, 2 usage or manifest error, 130 interrupted.`,
		Example: `  agenthost workflow run report --input '{"topic": "tea"}'
  agenthost workflow run report --run wf_0123abcd      # resume
  echo '{"topic": "tea"}' | agenthost workflow run report --input - --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			inputs, err := workflowInputs(cmd, input)
			if err != nil {
				return usage(err)
			}
			approver, err := newApprover(approve, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return usage(err)
			}
			if runID == "" {
				var b [6]byte
				_, _ = rand.Read(b[:])
				runID = "wf_" + hex.EncodeToString(b[:])
			} // with --run and no --input, a resumed run uses its stored inputs
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Provider: provider,
				Approver: approver, Stderr: providerLog(cmd)})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			fmt.Fprintf(cmd.ErrOrStderr(), "workflow %s: run %s\n", args[0], runID)
			emit := workflowPrinter(cmd.ErrOrStderr())
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				emit = func(e workflow.Event) { _ = enc.Encode(e) }
			}
			res, err := h.RunWorkflow(ctx, args[0], runID, inputs, host.WorkflowOptions{Approver: approver, Emit: emit, User: user})
			switch {
			case ctx.Err() != nil:
				return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: resume with --run %s", runID)}
			case errors.Is(err, workflow.ErrInputsDiffer):
				return usage(err)
			case err != nil:
				return failed(err)
			}
			if !jsonOut {
				if err := printJSON(cmd, res.Output); err != nil {
					return err
				}
			}
			if res.Status != workflow.StatusDone {
				return failed(fmt.Errorf("workflow %s failed: %s", args[0], res.Error))
			}
			return nil
		}}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "the inputs: a JSON object, or - for stdin")
	f.StringVar(&runID, "run", "", "resume the run with this id (default: a new run)")
	f.StringVar(&approve, "approve", "ask", "approval steps and tool calls that ask: ask, all or none")
	f.StringVar(&provider, "provider", "", "use this [providers.NAME] for prompt steps")
	f.StringVar(&user, "user", os.Getenv("AGENTHOST_USER"), "who the run is for (default $AGENTHOST_USER)")
	f.BoolVar(&jsonOut, "json", false, "print the run's events as JSON Lines on stdout")
	return cmd
}

func workflowInputs(cmd *cobra.Command, input string) (map[string]any, error) {
	if input == "" {
		return nil, nil
	}
	b := []byte(input)
	if input == "-" {
		var err error
		if b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20)); err != nil {
			return nil, fmt.Errorf("--input -: %w", err)
		}
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil || in == nil {
		return nil, fmt.Errorf("--input: want a JSON object")
	}
	return in, nil
}

// workflowPrinter prints a run's events as lines on stderr.
func workflowPrinter(w io.Writer) func(workflow.Event) {
	return func(e workflow.Event) {
		step := e.Step
		if e.Item != nil {
			step = fmt.Sprintf("%s[%d]", e.Step, *e.Item)
		}
		switch e.Type {
		case "step_started":
			fmt.Fprintf(w, "  %s: started\n", step)
		case "step_finished":
			note := ""
			if e.Resumed {
				note = " (earlier)"
			}
			switch {
			case e.Error != "":
				fmt.Fprintf(w, "  %s: %s%s: %s\n", step, e.Status, note, e.Error)
			default:
				out, _ := json.Marshal(e.Output)
				fmt.Fprintf(w, "  %s: %s%s %s\n", step, e.Status, note, clip(string(out), 120))
			}
		case "workflow_finished":
			fmt.Fprintf(w, "workflow %s\n", e.Status)
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
