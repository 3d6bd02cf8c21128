package main

import (
	"fmt"
	"os"
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
	cmd.AddCommand(list, newAuditVerifyCmd(), newAuditCheckpointCmd())
	return cmd
}

func newAuditVerifyCmd() *cobra.Command {
	var cpFile string
	var legacy bool
	verify := &cobra.Command{Use: "verify", Short: "Check that no record was changed, removed or inserted", Args: cobra.NoArgs,
		Long: `verify reads the whole log and checks it: it begins with its genesis record (written when
the log was created), its records are numbered from 1 without a gap, and each holds the hash
of the one before it, so a record changed, removed, inserted or renumbered afterwards, or the
log's head deleted, is found and the first break named.

A cut tail (the last records deleted) leaves a log that verifies alone: --checkpoint FILE
checks the log against a checkpoint taken before (agenthost audit checkpoint), which names
the log, how many records it held and the last one's hash. The log must still hold those
records, unchanged.

A log begun before agenthost wrote genesis records has none: verify reports it and fails,
unless --legacy accepts it (or the checkpoint given was taken of it with --legacy).

Exit status: 0 the log holds, 1 it does not (the first break is named).`,
		Example: "  agenthost audit verify\n  agenthost audit checkpoint > audit-2026-11-27.json\n  agenthost audit verify --checkpoint audit-2026-11-27.json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cp *audit.Checkpoint
			if cpFile != "" {
				f, err := os.Open(cpFile)
				if err != nil {
					return usage(err)
				}
				c, err := audit.ReadCheckpoint(f)
				f.Close()
				if err != nil {
					return usage(fmt.Errorf("%s: %w", cpFile, err))
				}
				cp = &c
			}
			return withAudit(cmd, func(s audit.Store) error {
				recs, err := s.Audit(cmd.Context(), 0, 0)
				if err != nil {
					return failed(err)
				}
				head, err := audit.VerifyLog(recs, legacy || (cp != nil && cp.Legacy))
				if err != nil {
					return failed(err)
				}
				from := "from its genesis record"
				if head.Legacy {
					from = "from record 1 (a legacy log: no genesis record)"
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%d records, chain intact %s; last hash %s\n", head.Records, from, head.Head)
				if cp != nil {
					if err := audit.VerifyCheckpoint(recs, *cp); err != nil {
						return failed(err)
					}
					fmt.Fprintf(out, "checkpoint holds: records 1 to %d are those checkpointed (last hash %s)\n", cp.Records, cp.Head)
				}
				return nil
			})
		}}
	verify.Flags().StringVar(&cpFile, "checkpoint", "", "also check the log against this checkpoint (agenthost audit checkpoint)")
	verify.Flags().BoolVar(&legacy, "legacy", false, "accept a log begun before genesis records")
	return verify
}

func newAuditCheckpointCmd() *cobra.Command {
	var legacy bool
	c := &cobra.Command{Use: "checkpoint", Short: "Print a checkpoint of the log, to keep elsewhere and verify against later", Args: cobra.NoArgs,
		Long: `checkpoint verifies the whole log (as verify does) and prints, as JSON, what anchors it as it
is now: the hash of its record 1 (which log), how many records it holds and the hash of the
last. Keep it where whoever can write the database cannot (a ticket, another machine, a
signed commit): verify, given the file, then finds a log cut below the checkpoint, or
rewritten up to it, which the chain alone cannot show.

Exit status: 0 printed, 1 the log does not verify (nothing is printed).`,
		Example: "  agenthost audit checkpoint > audit-2026-11-27.json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd, func(s audit.Store) error {
				recs, err := s.Audit(cmd.Context(), 0, 0)
				if err != nil {
					return failed(err)
				}
				head, err := audit.VerifyLog(recs, legacy)
				if err != nil {
					return failed(err)
				}
				return printJSON(cmd, head)
			})
		}}
	c.Flags().BoolVar(&legacy, "legacy", false, "accept a log begun before genesis records")
	return c
}

func withAudit(cmd *cobra.Command, f func(audit.Store) error) error {
	return withStore(cmd, func(h *host.Host) error {
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
