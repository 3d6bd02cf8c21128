package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/spf13/cobra"
)

func newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List stored sessions and show one",
		Example: `  agenthost sessions list
  agenthost sessions show ses_0123abcd
  agenthost sessions fork ses_0123abcd --at 8 --replace-result call_1=42
  agenthost sessions diff ses_0123abcd ses_4567ef01
  agenthost sessions prune --older-than 30d --dry-run
  agenthost run --session ses_0123abcd "and then?"   # continue one`}
	var jsonOut, seqs bool
	show := &cobra.Command{
		Use: "show ID", Short: "Show a session's conversation (or its stored events with --json)", Args: cobra.ExactArgs(1),
		Example: `  agenthost sessions show ses_0123abcd
  agenthost sessions show ses_0123abcd --json | jq -c 'select(.type == "tool_result")'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				return showSession(cmd, h, args[0], jsonOut, seqs)
			})
		},
	}
	show.Flags().BoolVar(&jsonOut, "json", false, "print the stored events as JSON Lines")
	show.Flags().BoolVar(&seqs, "seq", false, "number each line with its entry's seq (what sessions fork --at takes)")
	var listJSON bool
	list := &cobra.Command{
		Use: "list", Short: "List sessions, most recent first", Args: cobra.NoArgs,
		Example: `  agenthost sessions list
  agenthost sessions list --json | jq -r '.[] | select(.last_status == "failed") | .id'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				return listSessions(cmd, h, listJSON)
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print a JSON array: id, title, last_status, cost_usd, runs, entries, updated")
	cmd.AddCommand(list, show, newForkCmd(), newDiffCmd(), newFeedbackCmd(), newPruneCmd(), newSessionsExportCmd(), &cobra.Command{
		Use: "rm ID...", Short: "Delete sessions (not one whose run is in progress)", Args: cobra.MinimumNArgs(1),
		Example: `  agenthost sessions rm ses_0123abcd ses_4567ef01`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				return removeSessions(cmd, h, args)
			})
		},
	})
	return cmd
}

// showSession is `sessions show`: the conversation, or the stored events with --json.
func showSession(cmd *cobra.Command, h *host.Host, id string, jsonOut, seqs bool) error {
	entries, err := h.Store.Load(cmd.Context(), id)
	if err != nil {
		return failed(err)
	}
	if len(entries) == 0 {
		return failed(fmt.Errorf("no session %q in %s", id, h.Manifest.Store.Where()))
	}
	if jsonOut {
		emit := jsonLines(cmd.OutOrStdout())
		for _, e := range entries {
			if e.Kind == loop.EntryEvent {
				emit(*e.Event)
			}
		}
		return nil
	}
	out := cmd.OutOrStdout()
	lin, forked, err := h.Lineage(cmd.Context(), id)
	if err != nil {
		return failed(err)
	}
	if forked {
		fmt.Fprintf(out, "-- forked from %s at entry %d (its first %d entries)%s\n", lin.Parent, lin.At, lin.Base, editsNote(lin.Edits))
	}
	var line strings.Builder
	for _, e := range entries {
		if !seqs {
			printEntry(out, e)
			continue
		}
		line.Reset()
		printEntry(&line, e)
		if line.Len() > 0 {
			fmt.Fprintf(out, "#%d %s", e.Seq, line.String())
		}
	}
	return nil
}

// editsNote says which edits a fork made.
func editsNote(edits []loop.Edit) string {
	if len(edits) == 0 {
		return ""
	}
	ops := make([]string, len(edits))
	for i, e := range edits {
		ops[i] = string(e.Op)
		if e.CallID != "" {
			ops[i] += " " + e.CallID
		}
	}
	return ", edited: " + strings.Join(ops, "; ")
}

// printEntry prints one stored entry of a session's conversation: a message, a
// compaction, a run's end or a hand-off (other events are not shown).
func printEntry(out io.Writer, e loop.Entry) {
	switch {
	case e.Kind == loop.EntryMessage:
		printMessage(out, *e.Message)
	case e.Kind == loop.EntryCompaction:
		fmt.Fprintf(out, "[compaction: %d messages replaced]\n", e.Compaction.Replace)
	case e.Kind == loop.EntryEvent && e.Event.Type == loop.EventRunFinished:
		d := e.Event.Data.(*loop.RunFinishedData)
		fmt.Fprintf(out, "-- run %s: %s (%s), %d tokens", e.Event.RunID, d.Status, d.Reason, d.Usage.TotalTokens)
		if m := d.Metrics; m != (loop.RunMetrics{}) {
			fmt.Fprintf(out, "; %s, %s (%s), %s, %s, %s, %d ms", plural(m.ModelCalls, "model call"),
				plural(m.ToolCalls, "tool call"), plural(m.ToolErrors, "error"), plural(m.Steps, "step"),
				plural(m.Replans, "replan"), plural(m.Handoffs, "handoff"), m.DurationMS)
		}
		fmt.Fprintln(out)
	case e.Kind == loop.EntryEvent && e.Event.Type == loop.EventHandoff:
		d := e.Event.Data.(*loop.HandoffData)
		fmt.Fprintf(out, "-- handoff %s → %s", d.From, d.To)
		if d.Reason != "" {
			fmt.Fprintf(out, ": %s", d.Reason)
		}
		fmt.Fprintln(out)
	}
}

// listSessions is `sessions list`: a table, most recent first, or JSON with --json.
func listSessions(cmd *cobra.Command, h *host.Host, jsonOut bool) error {
	ss, err := h.Sessions(cmd.Context())
	if err != nil {
		return failed(err)
	}
	if jsonOut {
		out := []sessionRow{}
		for _, s := range ss {
			sum, err := summarize(cmd.Context(), h.Store, s.ID)
			if err != nil {
				return failed(err)
			}
			out = append(out, sessionRow{ID: s.ID, Title: sum.title, LastStatus: sum.status, CostUSD: sum.cost,
				Runs: s.Runs, Entries: s.Entries, Updated: s.Updated.UTC()})
		}
		return printJSON(cmd, out)
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tTITLE\tLAST STATUS\tCOST\tRUNS\tUPDATED")
	for _, s := range ss {
		sum, err := summarize(cmd.Context(), h.Store, s.ID)
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t$%.4f\t%d\t%s\n", s.ID, dash(sum.title), dash(sum.status), sum.cost, s.Runs,
			s.Updated.Local().Format("2006-01-02 15:04:05"))
	}
	return w.Flush()
}

// removeSessions is `sessions rm`: each session must be stored.
func removeSessions(cmd *cobra.Command, h *host.Host, ids []string) error {
	for _, id := range ids {
		if es, err := h.Store.Load(cmd.Context(), id); err != nil {
			return failed(err)
		} else if len(es) == 0 {
			return usage(fmt.Errorf("no session %q", id))
		}
		if err := h.DeleteSession(cmd.Context(), id, "cli"); err != nil {
			return failed(err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", id)
	}
	return nil
}

// sessionRow is one session of `sessions list --json`. A session with no run has
// title and last_status "" (the table shows "-").
type sessionRow struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	LastStatus string    `json:"last_status"`
	CostUSD    float64   `json:"cost_usd"`
	Runs       int64     `json:"runs"`
	Entries    int64     `json:"entries"`
	Updated    time.Time `json:"updated"`
}

// sessionSummary is what `sessions list` shows of a session beside its counts.
type sessionSummary struct {
	title, status string
	cost          float64
}

// summarize reads a session: its first prompt (shortened) as the title, the status of
// its last run and the cost of all its runs (loop.Summarize).
func summarize(ctx context.Context, st loop.SessionStore, id string) (sessionSummary, error) {
	es, err := st.Load(ctx, id)
	if err != nil {
		return sessionSummary{}, err
	}
	s := loop.Summarize(es, 48)
	return sessionSummary{title: s.Title, status: string(s.LastStatus), cost: s.CostUSD}, nil
}

// dash is how the table shows an empty value.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printMessage(out interface{ Write([]byte) (int, error) }, m loop.Message) {
	switch m.Role {
	case loop.RoleTool:
		fmt.Fprintf(out, "tool %s [%s]: %s\n", m.Name, m.ToolCallID, preview(m.Text(), 200))
	default:
		text := strings.TrimSpace(m.Text())
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Name+" "+c.Arguments)
		}
		if len(calls) > 0 {
			text = strings.TrimSpace(text + " → " + strings.Join(calls, "; "))
		}
		fmt.Fprintf(out, "%s: %s\n", m.Role, text)
	}
}
