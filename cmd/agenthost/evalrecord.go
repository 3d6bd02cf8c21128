package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agenthost/agenthost/eval"
	"github.com/spf13/cobra"
)

func newEvalRecordCmd() *cobra.Command {
	var (
		provider, approve, dir string
		parallel, judgeTokens  int
	)
	cmd := &cobra.Command{
		Use:   "record DATASET --provider NAME --fixture DIR",
		Short: "Run a dataset once against a real provider and write its runs as a replay fixture",
		Long: `record runs every case of DATASET as eval does, against --provider, and writes each passing
case's run into the fixture DIR (as sessions export --fixture does): the model's answers, the
tools' results, and the case with its input and graders and the expectations the run met
(status, tool calls with arguments and results, final text). Model-judge graders are left
out of the recorded case (the judge's answer is not replayed); plugin graders stay. A failing
case is not recorded: it is reported, and record exits 1.

eval's replay option then runs the cases offline and deterministically, in CI.`,
		Example: `  agenthost eval record evals/smoke.jsonl --provider openai --fixture evals/smoke.replay`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" || dir == "" {
				return usage(fmt.Errorf("record needs --provider NAME and --fixture DIR"))
			}
			cases, err := eval.Load(args[0])
			if err != nil {
				return usage(err)
			}
			f, err := eval.OpenFixture(dir)
			if err != nil {
				return usage(fmt.Errorf("--fixture: %w", err))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := openEvalHost(ctx, cmd, nil, provider, approve, parallel, nil)
			if err != nil {
				return err
			}
			defer h.Close()
			rep, err := runEval(ctx, cmd, h, filepath.Base(args[0]), cases, parallel, judgeTokens)
			if err != nil {
				return failed(err)
			}
			recorded := 0
			for i, r := range rep.Cases {
				if !r.Pass {
					fmt.Fprintf(cmd.ErrOrStderr(), "not recorded: case %s failed: %s\n", r.ID, firstOr(r.Failures, r.Outcome.Error))
					continue
				}
				entries, err := h.Store.Load(ctx, r.Outcome.Session)
				if err != nil {
					return failed(err)
				}
				rec, err := eval.Record(r.ID, entries)
				if err != nil {
					return failed(fmt.Errorf("case %s: %w", r.ID, err))
				}
				// The dataset's input as it was given, and its plugin graders (Wasm, as
				// deterministic as the replay) with the run's expectations. A model
				// judge's answer is not in the fixture: the replay leaves it out.
				rec.Case.Input = cases[i].Input
				for _, g := range cases[i].Graders {
					if g.Plugin != "" {
						rec.Case.Graders = append(rec.Case.Graders, g)
					}
				}
				if err := f.Add(rec); err != nil {
					return failed(err)
				}
				recorded++
			}
			if recorded > 0 {
				if err := f.Write(); err != nil {
					return failed(err)
				}
			}
			rep.WriteTable(cmd.OutOrStdout())
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %d of %d cases in %s\n", recorded, len(cases), dir)
			if recorded < len(cases) {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&provider, "provider", "", "the [providers.NAME] to record (required)")
	fl.StringVar(&dir, "fixture", "", "the fixture directory to write (or add to; required)")
	fl.StringVar(&approve, "approve", "none", "tool calls needing approval: all or none")
	fl.IntVar(&parallel, "parallel", 1, "cases run at once")
	fl.IntVar(&judgeTokens, "judge-max-tokens", 4000, "each model judge's token budget")
	return cmd
}

// firstOr is the first of s, or else.
func firstOr(s []string, or string) string {
	if len(s) > 0 {
		return s[0]
	}
	return or
}
