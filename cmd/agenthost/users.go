package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/access"

	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

func newUsersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Add, list and remove the API's users; erase what is stored of one",
		Long: `Users authenticate to serve's API and console with their own bearer token and act with
their role:

  admin     everything, including the audit log
  operator  runs, approvals and every session; insights and metrics
  user      starts runs; their own sessions and those shared with them
  viewer    reads their own sessions and those shared with them

A session belongs to the user who started it; its owner shares it with
POST /v1/sessions/{id}/shares {"user", "role": "viewer"|"editor"}. Once a user exists,
serve refuses requests without a token even on loopback. AGENTHOST_TOKEN stays the
administrator's token.`}
	var dryRun, jsonOut bool
	erase := &cobra.Command{Use: "erase USER", Short: "Delete a user's sessions, runs, feedback and memories", Args: cobra.ExactArgs(1),
		Long: `erase deletes what the store holds of USER: every session they own or one of whose
runs was theirs (a session goes whole, with its runs and feedback, even when other users
took part), and their memories and preferences. USER is the name of a present user (it
means their id) or an id (u_..., o_...; a removed user's id still erases what they left):
erasure is by identity, so it never reaches an earlier account that had the same name. A session whose run is in progress is kept and named; run
erase again once it has ended. The erasure is recorded in the audit log, whose earlier
records keep the user's name (the log is append-only).

Exit status: 0 erased, 1 a session was kept because it is in use, 2 usage error.`,
		Example: "  agenthost users erase ana --dry-run\n  agenthost users erase ana",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
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
					who := res.User
					if who != args[0] {
						who = args[0] + " (" + res.User + ")"
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s %d sessions and %d memories of %s\n", verb, len(res.Sessions), res.Memories, who)
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
	cmd.AddCommand(erase, newUsersAddCmd(), newUsersRmCmd(), newUsersListCmd())
	return cmd
}

func newUsersAddCmd() *cobra.Command {
	var role string
	cmd := &cobra.Command{Use: "add NAME", Short: "Add a user and print their token (shown this once)", Args: cobra.ExactArgs(1),
		Example: "  agenthost users add ana --role user",
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := access.ParseRole(role)
			if err != nil {
				return usage(err)
			}
			if err := access.CheckName(args[0]); err != nil {
				return usage(err)
			}
			return withStore(cmd, func(h *host.Host) error {
				tok, err := h.AddUser(cmd.Context(), args[0], r, "cli")
				if err != nil {
					return failed(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), tok)
				fmt.Fprintf(cmd.ErrOrStderr(), "added %s (%s); the token above is shown once: the store keeps only its hash\n", args[0], r)
				return nil
			})
		}}
	cmd.Flags().StringVar(&role, "role", "user", "admin, operator, user or viewer")
	return cmd
}

func newUsersRmCmd() *cobra.Command {
	return &cobra.Command{Use: "rm NAME", Short: "Remove a user: their token stops working; their sessions stay", Args: cobra.ExactArgs(1),
		Example: "  agenthost users rm ana",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				if err := h.RemoveUser(cmd.Context(), args[0], "cli"); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		}}
}

func newUsersListCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{Use: "list", Short: "List the users and their roles", Args: cobra.NoArgs,
		Example: "  agenthost users list\n  agenthost users list --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				as, ok := h.Access()
				if !ok {
					return failed(fmt.Errorf("the %s store keeps no users", h.Manifest.Store.Kind))
				}
				users, err := as.Users(cmd.Context())
				if err != nil {
					return failed(err)
				}
				if jsonOut {
					return printJSON(cmd, users)
				}
				for _, u := range users {
					fmt.Fprintf(cmd.OutOrStdout(), "%-24s %-9s %s %s\n", u.Name, u.Role, u.Created.Format(time.RFC3339), u.ID)
				}
				return nil
			})
		}}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the users as JSON")
	return cmd
}
