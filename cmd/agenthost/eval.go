package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agenthost/agenthost/eval"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/spf13/cobra"
)

func newEvalCmd() *cobra.Command {
	var (
		provider, approve, baseline string
		replay, tools               string
		junit, html                 string
		jsonOut                     bool
		parallel, judgeTokens       int
		tol                         eval.Tolerance
	)
	cmd := &cobra.Command{
		Use:   "eval [DATASET]",
		Short: "Run an evaluation dataset (JSONL or YAML cases) against the agent and grade it",
		Long: `eval runs each case of DATASET on a fresh session of the manifest's agent, checks its
expectations, grades it with grader plugins or a model judge, and reports.

DATASET is JSON Lines or YAML; a case is {"id", "input": {"prompt" | "messages", "user",
"agent", "output_schema"}, "expect": {"contains", "not_contains", "matches", "equals",
"output_schema", "output_equals", "tools": [{"name", "args", "result"}], "tools_in_order",
"no_tools", "max_cost_usd", "max_steps", "status", "reason"}, "graders": [{"plugin", "config"} |
{"rubric"}, "min_score"]}.

--replay DIR runs offline against a fixture that sessions export or eval record wrote: the
scripted model answers as the recorded one did, the tools run live (or --tools replay answers
each call with its recorded result), and each case expects what the recorded run did.

Exit status: 0 every case passed and no regression, 1 a case failed or a regression
against --baseline, 2 usage, manifest or dataset error.`,
		Example: `  agenthost eval evals/smoke.jsonl
  agenthost eval evals/smoke.yaml --parallel 4 --junit eval.xml --html eval.html
  agenthost eval evals/smoke.jsonl --json > baseline.json
  agenthost eval evals/smoke.jsonl --baseline baseline.json
  agenthost eval --replay evals/recorded            # offline: the fixture's cases, model and tool results`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var m *manifest.Manifest
			var replayTool func(loop.ToolCall) loop.ToolResult
			if replay != "" {
				var err error
				if m, err = replayManifest(cmd, replay); err != nil {
					return err
				}
				if replayTool, err = replayTools(replay, tools); err != nil {
					return err
				}
				if len(args) == 0 {
					args = []string{filepath.Join(replay, eval.FixtureCases)}
				}
				if provider != "" {
					return usage(fmt.Errorf("--replay and --provider: the fixture's scripted model is the provider"))
				}
				provider = replayProvider
			} else if len(args) != 1 {
				return usage(fmt.Errorf("eval needs a DATASET (or --replay DIR)"))
			} else if tools != "live" {
				return usage(fmt.Errorf("--tools %s: only with --replay", tools))
			}
			cases, err := eval.Load(args[0])
			if err != nil {
				return usage(err)
			}
			var base *eval.Report
			if baseline != "" {
				if base, err = eval.LoadReport(baseline); err != nil {
					return usage(fmt.Errorf("--baseline: %w", err))
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := openEvalHost(ctx, cmd, m, provider, approve, parallel, replayTool)
			if err != nil {
				return err
			}
			defer h.Close()
			rep, err := runEval(ctx, cmd, h, filepath.Base(args[0]), cases, parallel, judgeTokens)
			if err != nil {
				return failed(err)
			}
			if base != nil {
				rep.Compare(base, tol)
			}
			return reportEval(cmd, rep, junit, html, jsonOut)
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "use this [providers.NAME] instead of agent.provider")
	f.StringVar(&replay, "replay", "", "run offline against a replay fixture (sessions export --fixture, eval record): its cases unless DATASET is given")
	f.StringVar(&tools, "tools", "live", "with --replay: live (run the tools) or replay (answer each call with its recorded result)")
	f.StringVar(&approve, "approve", "none", "tool calls needing approval: all or none")
	f.IntVar(&parallel, "parallel", 1, "cases run at once")
	f.BoolVar(&jsonOut, "json", false, "print the report as JSON (what --baseline reads)")
	f.StringVar(&junit, "junit", "", "also write the results as JUnit XML to this file")
	f.StringVar(&html, "html", "", "also write an HTML report with each case's transcript to this file")
	f.StringVar(&baseline, "baseline", "", "a report from --json: flag regressions in pass rate, cases, cost and duration")
	f.Float64Var(&tol.Cost, "max-cost-increase", 0.2, "with --baseline: the cost increase tolerated (0.2 = 20%)")
	f.Float64Var(&tol.Latency, "max-latency-increase", 0.5, "with --baseline: the mean duration increase tolerated")
	f.IntVar(&judgeTokens, "judge-max-tokens", 4000, "each model judge's token budget")
	cmd.AddCommand(newEvalRecordCmd())
	return cmd
}

// openEvalHost opens the host eval runs on: the manifest (m, or the -c file when nil)
// with provider as the agent's, and approve's answer to approvals.
func openEvalHost(ctx context.Context, cmd *cobra.Command, m *manifest.Manifest, provider, approve string, parallel int,
	replayTool func(loop.ToolCall) loop.ToolResult) (*host.Host, error) {
	if parallel < 1 || parallel > 64 {
		return nil, usage(fmt.Errorf("--parallel %d: want 1 to 64", parallel))
	}
	approver, err := newApprover(approve, nil, nil)
	if err != nil || approve == "ask" {
		return nil, usage(fmt.Errorf("--approve %q: want all or none (no one is there to ask)", approve))
	}
	h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Loaded: m, Lock: lockMode(cmd), Provider: provider,
		Approver: approver, Stderr: providerLog(cmd), ReplayTool: replayTool})
	if err != nil {
		return nil, err
	}
	warn(cmd, h)
	return h, nil
}

// runEval runs the cases on h, telling stderr of each as it ends.
func runEval(ctx context.Context, cmd *cobra.Command, h *host.Host, dataset string, cases []eval.Case, parallel, judgeTokens int) (*eval.Report, error) {
	runner := h.Runner()
	return eval.Run(ctx, dataset, cases, eval.Options{
		Run: func(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error) {
			return runner.RunWith(ctx, in, emit)
		},
		Grade: h.Grade, Parallel: parallel, JudgeMaxTokens: judgeTokens,
		Progress: func(done, total int, r eval.Result) {
			mark := "pass"
			if !r.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "[%d/%d] %s %s (%d ms)\n", done, total, mark, r.ID, r.DurationMS)
		},
	})
}

// reportEval writes the report's files and prints it; a failing report exits 1.
func reportEval(cmd *cobra.Command, rep *eval.Report, junit, html string, jsonOut bool) error {
	if err := writeEvalFiles(rep, junit, html); err != nil {
		return failed(err)
	}
	if jsonOut {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return failed(err)
		}
	} else {
		rep.WriteTable(cmd.OutOrStdout())
	}
	if rep.Failing() {
		return &exitError{code: exitFailed}
	}
	return nil
}

// writeEvalFiles writes the JUnit and HTML reports, each through a temporary file renamed
// into place, so a CI job never reads half a report.
func writeEvalFiles(rep *eval.Report, junit, html string) error {
	for _, out := range []struct {
		path  string
		write func(f *os.File) error
	}{{junit, func(f *os.File) error { return rep.WriteJUnit(f) }}, {html, func(f *os.File) error { return rep.WriteHTML(f) }}} {
		if out.path == "" {
			continue
		}
		tmp, err := os.CreateTemp(filepath.Dir(out.path), ".eval-*")
		if err != nil {
			return err
		}
		err = out.write(tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), out.path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", out.path, err)
		}
	}
	return nil
}
