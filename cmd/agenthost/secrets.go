package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
)

// newSecretsCmd is `agenthost secrets set|list|rm`: a user's own secrets, which plugins
// take as config (config = { KEY = { secret = "NAME", per_user = true } }). A value is
// read from stdin, never from the command line, and never printed.
func newSecretsCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{Use: "secrets", Short: "Set, list and remove a user's own secrets (plugins' per-user config)",
		Long: `A plugin's config value { secret = "NAME", per_user = true } is the calling user's own
secret NAME. These commands keep a user's secrets in the session
store (sealed when the store has a key). A value is read from stdin and never shown back:
list prints names only. Over HTTP: PUT /v1/secrets/NAME {"value": "…"}, GET /v1/secrets,
DELETE /v1/secrets/NAME.`}
	cmd.PersistentFlags().StringVar(&user, "user", os.Getenv("AGENTHOST_USER"), "whose secrets: a user's name or id (default $AGENTHOST_USER)")
	resolve := func(cmd *cobra.Command, h *host.Host) (string, error) {
		if user == "" {
			return "", fmt.Errorf("name the user with --user")
		}
		return h.ResolveUser(cmd.Context(), user)
	}
	set := &cobra.Command{Use: "set NAME", Short: "Set a secret; its value is read from stdin", Args: cobra.ExactArgs(1),
		Example: "  printf %s \"$GITHUB_TOKEN\" | agenthost secrets set github --user ana",
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10+1))
			if err != nil {
				return failed(err)
			}
			value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			return withStore(cmd, func(h *host.Host) error {
				u, err := resolve(cmd, h)
				if err != nil {
					return failed(err)
				}
				if err := h.SetUserSecret(cmd.Context(), u, args[0], value, "cli"); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "secret %s set for %s\n", args[0], user)
				return nil
			})
		}}
	list := &cobra.Command{Use: "list", Short: "List a user's secrets by name (never their values)", Args: cobra.NoArgs,
		Example: `  agenthost secrets list --user ana`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				u, err := resolve(cmd, h)
				if err != nil {
					return failed(err)
				}
				names, err := h.UserSecretNames(cmd.Context(), u)
				if err != nil {
					return failed(err)
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
				return nil
			})
		}}
	rm := &cobra.Command{Use: "rm NAME", Short: "Remove a user's secret", Args: cobra.ExactArgs(1),
		Example: `  agenthost secrets rm github --user ana`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				u, err := resolve(cmd, h)
				if err != nil {
					return failed(err)
				}
				found, err := h.DeleteUserSecret(cmd.Context(), u, args[0], "cli")
				if err != nil {
					return failed(err)
				}
				if !found {
					return failed(fmt.Errorf("%s has no secret %s", user, args[0]))
				}
				return nil
			})
		}}
	cmd.AddCommand(set, list, rm)
	return cmd
}
