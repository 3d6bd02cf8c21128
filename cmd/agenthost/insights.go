package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/insights"
	"github.com/agenthost/agenthost/loop"
)

func newInsightsCmd() *cobra.Command {
	var since string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "insights [--since 7d] [--json]",
		Short: "Sum up the stored runs: outcomes, tools, cost, feedback and the commonest failures",
		Long: `Read every stored session and report, for the runs that started in the window:
runs by status and reason with their cost, each tool's calls, error rate and durations,
feedback per agent (sessions feedback, POST /v1/sessions/{id}/runs/{run}/feedback), and
the commonest failures (status, reason and the last error message) with example runs to
open with "sessions show". Nothing is written.`,
		Example: `  agenthost insights
  agenthost insights --since 24h --json | jq '.tools[] | select(.error_rate > 0.1)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			window, err := windowFlag("--since", since)
			if err != nil {
				return usage(err)
			}
			return withStore(cmd, func(h *host.Host) error {
				r, err := insights.Compute(cmd.Context(), h.Store, time.Now().Add(-window))
				if err != nil {
					return failed(err)
				}
				if jsonOut {
					return printJSON(cmd, r)
				}
				printInsights(cmd, r, since)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "7d", "the window: runs started this long ago or later (30m, 24h, 7d)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	cmd.AddCommand(newInsightsSuggestCmd(), newInsightsApplyCmd())
	return cmd
}

// newInsightsSuggestCmd is "insights suggest": the changes the stored runs argue for.
func newInsightsSuggestCmd() *cobra.Command {
	var since string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "suggest [--since 7d] [--json]",
		Short: "Propose changes the stored runs argue for, each with its evidence",
		Long: `Read the same report as "insights" and propose concrete changes: a fallback (or a
tool group, or removal) for a tool that fails often, a limit to raise where runs stopped at
it, a system prompt addition for a failure that repeats, a review of an agent its users rate
poorly or whose plans are revised often. Each names what to change, the counts it rests on,
example runs to open with "sessions show", and an id: "insights apply ID" makes the change
(a reviewed one, audited). Nothing is written here.`,
		Example: `  agenthost insights suggest
  agenthost insights suggest --since 30d --json | jq '.[] | select(.kind == "fallback")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			window, err := windowFlag("--since", since)
			if err != nil {
				return usage(err)
			}
			return withStore(cmd, func(h *host.Host) error {
				r, err := insights.Compute(cmd.Context(), h.Store, time.Now().Add(-window))
				if err != nil {
					return failed(err)
				}
				sug := insights.Suggest(r)
				data, err := os.ReadFile(h.Manifest.Path)
				if err != nil {
					return failed(err)
				}
				insights.Stamp(sug, data)
				if jsonOut {
					return printJSON(cmd, append([]insights.Suggestion{}, sug...))
				}
				out := cmd.OutOrStdout()
				if len(sug) == 0 {
					fmt.Fprintf(out, "nothing to suggest from %s in the last %s\n", plural(r.Runs, "run"), since)
				}
				for i, s := range sug {
					var ex []string
					for _, e := range s.Examples {
						ex = append(ex, e.Session+"/"+e.Run)
					}
					fmt.Fprintf(out, "%d. [%s] %s\n   because %s", i+1, s.Kind, s.Change, s.Evidence)
					if len(ex) > 0 {
						fmt.Fprintf(out, " (e.g. %s)", strings.Join(ex, ", "))
					}
					fmt.Fprintf(out, "\n   id %s\n", s.ID)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "7d", "the window: runs started this long ago or later (30m, 24h, 7d)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the suggestions as JSON")
	return cmd
}

// windowFlag reads a window flag's value: a Go duration, or whole days ("7d").
func windowFlag(flag, s string) (time.Duration, error) {
	d, err := insights.ParseWindow(s)
	if err != nil {
		return 0, fmt.Errorf("%s %w", flag, err)
	}
	return d, nil
}

func printInsights(cmd *cobra.Command, r *insights.Report, since string) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s in the last %s\n", plural(r.Runs, "run"), since)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(r.Outcomes) > 0 {
		fmt.Fprintln(w, "\nSTATUS\tREASON\tRUNS\tCOST")
		for _, o := range r.Outcomes {
			fmt.Fprintf(w, "%s\t%s\t%d\t$%.4f\n", o.Status, o.Reason, o.Runs, o.CostUSD)
		}
	}
	if len(r.Tools) > 0 {
		fmt.Fprintln(w, "\nTOOL\tCALLS\tERRORS\tERROR RATE\tREFUSED\tCACHED\tMEAN\tMAX")
		for _, t := range r.Tools {
			fmt.Fprintf(w, "%s\t%d\t%d\t%.0f%%\t%d\t%d\t%.0f ms\t%d ms\n", t.Name, t.Calls, t.Errors, 100*t.ErrorRate, t.Refused, t.Cached, t.MeanMS, t.MaxMS)
		}
	}
	if len(r.Feedback) > 0 {
		fmt.Fprintln(w, "\nAGENT\tFEEDBACK\tMEAN SCORE\tUP\tDOWN")
		for _, f := range r.Feedback {
			fmt.Fprintf(w, "%s\t%d\t%.2f\t%d\t%d\n", dash(f.Agent), f.Count, f.MeanScore, f.Up, f.Down)
		}
	}
	if len(r.Plans) > 0 {
		fmt.Fprintln(w, "\nAGENT\tPLAN RUNS\tREVISED\tREVISIONS\tMEAN")
		for _, p := range r.Plans {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.2f\n", dash(p.Agent), p.Runs, p.RevisedRuns, p.Revisions, p.MeanRevisions)
		}
	}
	if len(r.Nested) > 0 {
		fmt.Fprintln(w, "\nAGENT\tNESTED RUNS\tCOST (IN THEIR CALLERS')\tPROMPT TOKENS\tCOMPLETION TOKENS")
		for _, n := range r.Nested {
			fmt.Fprintf(w, "%s\t%d\t$%.4f\t%d\t%d\n", dash(n.Agent), n.Runs, n.CostUSD, n.Tokens.Prompt, n.Tokens.Completion)
		}
	}
	if tk := r.Tokens; tk.Prompt+tk.Completion > 0 {
		fmt.Fprintln(w, "\nPROMPT TOKENS\tCACHED\tCACHE WRITES\tCOMPLETION TOKENS")
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\n", tk.Prompt, tk.CachedPrompt, tk.CacheWrite, tk.Completion)
	}
	w.Flush()
	if len(r.Failures) > 0 {
		fmt.Fprintln(out, "\nCommonest failures:")
		for _, f := range r.Failures {
			var ex []string
			for _, e := range f.Examples {
				ex = append(ex, e.Session+"/"+e.Run)
			}
			fmt.Fprintf(out, "  %d× %s/%s: %s (e.g. %s)\n", f.Runs, f.Status, f.Reason, dash(f.Message), strings.Join(ex, ", "))
		}
	}
}

// newFeedbackCmd is "sessions feedback ID RUN --score N": the CLI's way to say what a
// run was worth, as the console's thumbs and the HTTP route do.
func newFeedbackCmd() *cobra.Command {
	var score int
	var comment string
	cmd := &cobra.Command{
		Use:   "feedback ID RUN --score N [--comment TEXT]",
		Short: "Record feedback on a run: -1 or 1 (thumbs), or a rating from 0 to 5",
		Example: `  agenthost sessions feedback ses_0123abcd run_4567ef01 --score 1
  agenthost sessions feedback ses_0123abcd run_4567ef01 --score 2 --comment "missed the second question"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("score") {
				return usage(fmt.Errorf("--score is required: -1 (thumbs down), 1 (thumbs up) or a rating from 0 to 5"))
			}
			f := loop.Feedback{SessionID: args[0], RunID: args[1], Score: score, Comment: comment}
			if err := f.Check(); err != nil {
				return usage(err)
			}
			return withStore(cmd, func(h *host.Host) error {
				fs, ok := h.Store.(loop.FeedbackStore)
				if !ok {
					return failed(fmt.Errorf("the %s store keeps no feedback", h.Manifest.Store.Kind))
				}
				entries, err := h.Store.Load(cmd.Context(), f.SessionID)
				if err != nil {
					return failed(err)
				}
				agent, found := loop.RunAgent(entries, f.RunID)
				if !found {
					return usage(fmt.Errorf("session %q has no run %q", f.SessionID, f.RunID))
				}
				f.Agent, f.Time = agent, time.Now().UTC()
				if err := fs.AddFeedback(cmd.Context(), f); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "feedback %d on %s/%s (%s) recorded\n", f.Score, f.SessionID, f.RunID, dash(f.Agent))
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&score, "score", 0, "-1 (thumbs down), 1 (thumbs up) or a rating from 0 to 5")
	cmd.Flags().StringVar(&comment, "comment", "", "what was good or wrong, in words")
	return cmd
}
