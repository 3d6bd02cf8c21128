package main

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

func newUsersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Act on everything stored of a user"}
	var dryRun, jsonOut bool
	erase := &cobra.Command{Use: "erase USER", Short: "Delete a user's sessions, runs, feedback and memories", Args: cobra.ExactArgs(1),
		Long: `erase deletes what the store holds of USER: every session one of whose runs was theirs
(a session goes whole, with its runs and feedback, even when other users took part), and
their memories and preferences. A session whose run is in progress is kept and named; run
erase again once it has ended. The erasure is recorded in the audit log, whose earlier
records keep the user's name (the log is append-only).

Exit status: 0 erased, 1 a session was kept because it is in use, 2 usage error.`,
		Example: "  agenthost users erase ana --dry-run\n  agenthost users erase ana",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPlugins(cmd, func(h *host.Host) error {
				res, err := h.EraseUser(cmd.Context(), args[0], "cli", dryRun)
				if err != nil {
					return failed(err)
				}
				if jsonOut {
					if err := printJSON(cmd, res); err != nil {
						return err
					}
				} else {
					verb := "erased"
					if dryRun {
						verb = "would erase"
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s %d sessions and %d memories of %s\n", verb, len(res.Sessions), res.Memories, res.User)
					for _, id := range res.Sessions {
						fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", id)
					}
				}
				if len(res.Busy) > 0 {
					return failed(fmt.Errorf("kept sessions with a run in progress: %s (erase again once they end)", strings.Join(res.Busy, ", ")))
				}
				return nil
			})
		}}
	erase.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be erased, erase nothing")
	erase.Flags().BoolVar(&jsonOut, "json", false, "print what was erased as JSON")
	cmd.AddCommand(erase)
	return cmd
}
