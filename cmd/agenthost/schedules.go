package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/manifest"
	"github.com/spf13/cobra"
)

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List the manifest's [[schedules]] with their next fire, or fire one now",
	}
	cmd.AddCommand(newSchedulesListCmd(), newSchedulesRunCmd())
	return cmd
}

func newSchedulesListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the declared schedules: when, as whom, what, the missed policy, the next fire and the last tick handled",
		Example: `  agenthost schedules list`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
			if err != nil {
				return err
			}
			if len(m.Schedules) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no schedules (declare them in [[schedules]] tables of the manifest)")
				return nil
			}
			h, err := host.Open(cmd.Context(), host.Options{Loaded: m, NoProvider: true, OnCompile: compileNote(cmd), Stderr: providerLog(cmd)})
			if err != nil {
				return err
			}
			defer h.Close()
			list, err := h.Schedules(cmd.Context(), time.Now())
			if err != nil {
				return failed(err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWHEN\tUSER\tRUNS\tMISSED\tNEXT FIRE\tLAST TICK")
			for _, s := range list {
				what := "prompt"
				if s.Workflow != "" {
					what = "workflow " + s.Workflow
				} else if s.Agent != "" {
					what = "prompt (agent " + s.Agent + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.When, s.User, what, s.Missed, stamp(s.Next), stamp(s.Last))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newSchedulesRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run NAME",
		Short: "Fire a schedule now, as its user, through the same path as serve's fires; prints the fire as JSON",
		Long: `Fire a declared schedule now: its prompt or workflow runs as the schedule's user (who
must exist in the store), authorised, admitted and audited as any run of that user, in
a session of its own, sched-NAME-UNIXTIME-ID. serve fires schedules on their own; this is for trying
one, or catching up by hand.

Exit status: 0 the run completed, 1 it failed or could not start, 2 usage or manifest error.`,
		Example: `  agenthost schedules run nightly-memory`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
			if err != nil {
				return err
			}
			if _, ok := m.Schedule(args[0]); !ok {
				return usage(fmt.Errorf("%w: %q", host.ErrNoSchedule, args[0]))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{Loaded: m, OnCompile: compileNote(cmd), Stderr: providerLog(cmd)})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			f, err := h.RunScheduleNow(ctx, args[0])
			if f.Status != "" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(f); err != nil {
					return failed(err)
				}
			}
			switch {
			case err != nil:
				return failed(err)
			case f.Status != "completed":
				return failed(errors.New("the fire's run " + string(f.Status) + ": " + string(f.Reason)))
			}
			return nil
		},
	}
}
