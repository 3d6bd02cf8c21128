package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
)

func newPruneCmd() *cobra.Command {
	var olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune [--older-than 30d] [--dry-run]",
		Short: "Delete the sessions not updated for a while ([store] retention, or --older-than)",
		Long: `Delete every session not updated for --older-than (default: [store] retention),
with its runs and feedback; a session whose run is in progress is kept. serve does the
same at start and every hour when [store] retention is set.`,
		Example: `  agenthost sessions prune --dry-run
  agenthost sessions prune --older-than 90d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				keep := time.Duration(h.Manifest.Store.Retention)
				if olderThan != "" {
					d, err := windowFlag("--older-than", olderThan)
					if err != nil {
						return usage(err)
					}
					keep = d
				}
				if keep <= 0 {
					return usage(fmt.Errorf("nothing to prune by: set [store] retention or --older-than"))
				}
				res, err := h.Prune(cmd.Context(), time.Now().Add(-keep), dryRun)
				if err != nil {
					return failed(err)
				}
				verb := "deleted"
				if dryRun {
					verb = "would delete"
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%s %d session(s) not updated for %s", verb, len(res.Deleted), keep)
				if len(res.Deleted) > 0 {
					fmt.Fprintf(out, ": %s", strings.Join(res.Deleted, " "))
				}
				fmt.Fprintln(out)
				if len(res.Busy) > 0 {
					fmt.Fprintf(out, "kept %d in use: %s\n", len(res.Busy), strings.Join(res.Busy, " "))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete sessions not updated for this long (30d, 12h)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	return cmd
}
