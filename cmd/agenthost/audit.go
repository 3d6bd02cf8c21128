package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read and verify the audit log (runs, approvals, deletions)"}
	var after int64
	var limit int
	var jsonOut bool
	list := &cobra.Command{Use: "list", Short: "List audit records, oldest first", Args: cobra.NoArgs,
		Example: "  agenthost audit list\n  agenthost audit list --after 120 --limit 50 --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd, func(s audit.Store) error {
				recs, err := s.Audit(cmd.Context(), after, limit)
				if err != nil {
					return failed(err)
				}
				if jsonOut {
					if recs == nil {
						recs = []audit.Record{}
					}
					return printJSON(cmd, recs)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tACTION\tACTOR\tTARGET\tDETAIL")
				for _, r := range recs {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format(time.DateTime), r.Action, r.Actor, dash(r.Target), details(r.Detail))
				}
				return tw.Flush()
			})
		}}
	list.Flags().Int64Var(&after, "after", 0, "records after this number")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (default all)")
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	verify := &cobra.Command{Use: "verify", Short: "Check that no record was changed, removed or inserted", Args: cobra.NoArgs,
		Long: `verify reads the whole log and checks its hash chain: each record holds the hash of the
one before it, so a record changed, removed or inserted afterwards breaks the chain there.

Exit status: 0 the chain holds, 1 it is broken (the first break is named).`,
		Example: "  agenthost audit verify",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd, func(s audit.Store) error {
				recs, err := s.Audit(cmd.Context(), 0, 0)
				if err != nil {
					return failed(err)
				}
				if err := audit.Verify(recs); err != nil {
					return failed(err)
				}
				last := "none"
				if n := len(recs); n > 0 {
					last = recs[n-1].Hash
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d records, chain intact; last hash %s\n", len(recs), last)
				return nil
			})
		}}
	cmd.AddCommand(list, verify)
	return cmd
}

func withAudit(cmd *cobra.Command, f func(audit.Store) error) error {
	return withPlugins(cmd, func(h *host.Host) error {
		s, ok := h.Store.(audit.Store)
		if !ok {
			return failed(fmt.Errorf("the %s store keeps no audit log", h.Manifest.Store.Kind))
		}
		return f(s)
	})
}

func details(d map[string]string) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + d[k]
	}
	return strings.Join(parts, " ")
}
