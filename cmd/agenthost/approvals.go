package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/spf13/cobra"
)

func newApprovalsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: "Approval grants: list and revoke"}
	grants := &cobra.Command{Use: "grants", Short: "The standing yeses approvers gave (for a session, or for a user for some hours)"}
	var jsonOut bool
	list := &cobra.Command{Use: "list", Short: "List the live grants, oldest first (expired ones are deleted as they are read)", Args: cobra.NoArgs,
		Example: "  agenthost approvals grants list\n  agenthost approvals grants list --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				gs, err := h.Grants(cmd.Context())
				if err != nil {
					return failed(err)
				}
				var names map[string]string
				if as, ok := h.Access(); ok && len(gs) > 0 {
					names = access.Names(cmd.Context(), as)
				}
				if jsonOut {
					// The API's shape (GET /v1/approvals/grants): the grant with its users' names.
					shown := make([]grantListed, len(gs))
					for i, g := range gs {
						shown[i] = grantListed{Grant: g, UserName: names[g.User], ByName: names[g.By]}
					}
					return printJSON(cmd, shown)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSCOPE\tFOR\tALLOWS\tBY\tEXPIRES")
				for _, g := range gs {
					who, what := g.Session, "tool "+g.Tool
					if g.Scope == loop.ScopeUser {
						who = named(names, g.User)
					}
					if g.Rule != "" {
						what = "rule " + g.Rule
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Scope, who, what, named(names, g.By), g.Expires.Local().Format(time.DateTime))
				}
				return tw.Flush()
			})
		}}
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	revoke := &cobra.Command{Use: "revoke ID", Short: "Revoke a grant: the calls it allowed ask again (recorded in the audit log)", Args: cobra.ExactArgs(1),
		Example: "  agenthost approvals grants revoke grant_3f2a9c0d1e4b5a6f",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				if err := h.RevokeGrant(cmd.Context(), args[0], "cli"); err != nil {
					if errors.Is(err, host.ErrNoGrant) {
						return failed(fmt.Errorf("%s: %w", args[0], err))
					}
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		}}
	grants.AddCommand(list, revoke)
	cmd.AddCommand(grants)
	return cmd
}

// grantListed is a grant as `approvals grants list --json` prints it: as the API lists
// it, with the names of the user it is for and of who gave it when the store knows them.
type grantListed struct {
	loop.Grant
	UserName string `json:"user_name,omitempty"`
	ByName   string `json:"by_name,omitempty"`
}

// named is a user as a listing shows it: the name the store knows for the id, with the
// id after it, or the id (or label) alone.
func named(names map[string]string, id string) string {
	if n := names[id]; n != "" {
		return n + " (" + id + ")"
	}
	return id
}

// terminalAnswer reads an answer typed at the prompt: y allows the call; s the tool for
// the rest of the session; h N (or hN) the tool for the run's user for N hours
// (docs/approvals.md); anything else, and an h with no valid number, refuses.
func terminalAnswer(line string) loop.Approval {
	switch line {
	case "y", "yes":
		return loop.Approval{Approved: true}
	case "s", "session":
		return loop.Approval{Approved: true, Scope: loop.ScopeSession}
	}
	n, ok := strings.CutPrefix(line, "h")
	if !ok {
		return loop.Approval{Reason: "rejected by the user"}
	}
	hours, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if err == nil && hours <= 0 {
		err = errors.New("must be more than 0")
	}
	a := loop.Approval{Approved: true}
	if err == nil {
		a, err = loop.GrantAnswer{Scope: loop.ScopeUser, Hours: hours}.Widen(a)
	}
	if err != nil {
		return loop.Approval{Reason: fmt.Sprintf("rejected: the answer %q names no hours (h8 is for 8 hours): %v", line, err)}
	}
	return a
}
