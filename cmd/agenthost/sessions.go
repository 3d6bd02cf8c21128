package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/spf13/cobra"
)

func newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List stored sessions and show one"}
	var jsonOut bool
	show := &cobra.Command{
		Use: "show ID", Short: "Show a session's conversation (or its stored events with --json)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPlugins(cmd, func(h *host.Host) error {
				entries, err := h.Store.Load(cmd.Context(), args[0])
				if err != nil {
					return failed(err)
				}
				if len(entries) == 0 {
					return failed(fmt.Errorf("no session %q in %s", args[0], h.Manifest.Store.Path))
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
				for _, e := range entries {
					switch {
					case e.Kind == loop.EntryMessage:
						printMessage(out, *e.Message)
					case e.Kind == loop.EntryCompaction:
						fmt.Fprintf(out, "[compaction: %d messages replaced]\n", e.Compaction.Replace)
					case e.Kind == loop.EntryEvent && e.Event.Type == loop.EventRunFinished:
						d := e.Event.Data.(loop.RunFinishedData)
						fmt.Fprintf(out, "-- run %s: %s (%s), %d tokens\n", e.Event.RunID, d.Status, d.Reason, d.Usage.TotalTokens)
					}
				}
				return nil
			})
		},
	}
	show.Flags().BoolVar(&jsonOut, "json", false, "print the stored events as JSON Lines")
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List sessions, most recent first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPlugins(cmd, func(h *host.Host) error {
				ss, err := h.Sessions(cmd.Context())
				if err != nil {
					return failed(err)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "SESSION\tRUNS\tENTRIES\tUPDATED")
				for _, s := range ss {
					fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", s.ID, s.Runs, s.Entries, s.Updated.Local().Format("2006-01-02 15:04:05"))
				}
				return w.Flush()
			})
		},
	}, show)
	return cmd
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
