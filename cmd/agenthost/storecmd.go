package main

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/spf13/cobra"
)

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Encryption keys of the session store",
		Long: `With [store] key_file (or AGENTHOST_STORE_KEY), what the store keeps (messages and
events, plugin values, memories) is sealed with AES-256-GCM, each value bound to its row.

To start: agenthost store keygen > store.key; chmod 600 store.key; key_file = "store.key";
agenthost store rotate-key (seals what was stored before).
To rotate: put a new key line (store keygen) first in the file, keep the old ones after it,
send SIGHUP to each serve and worker (or let them notice the change), run agenthost store
rotate-key until it re-seals nothing, then remove the old lines and SIGHUP again.`}
	keygen := &cobra.Command{Use: "keygen", Short: "Print a new key line (ID:BASE64) for a key file or AGENTHOST_STORE_KEY", Args: cobra.NoArgs,
		Example: "  agenthost store keygen > store.key && chmod 600 store.key",
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := seal.NewKey()
			if err != nil {
				return failed(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), k)
			return nil
		}}
	var jsonOut bool
	rotate := &cobra.Command{Use: "rotate-key", Short: "Seal everything stored with the current key (the first of the ring)", Args: cobra.NoArgs,
		Long: `rotate-key seals every value not yet sealed with the ring's first key: values written before
the store had keys, and values sealed with older keys. Memories are re-indexed. It can run
while serve runs (each row is re-sealed in one compare-and-set: a row written meanwhile is
skipped and read again, never overwritten with its old value), and again after an
interruption. Once a run re-seals nothing, the older keys may be removed from the ring, and
a value that is not sealed is refused from then on.`,
		Example: "  agenthost store rotate-key\n  agenthost store rotate-key --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(h *host.Host) error {
				r, ok := h.Store.(interface {
					Reseal(context.Context) (store.ResealStats, error)
				})
				if !ok {
					return failed(fmt.Errorf("the %s store keeps nothing to seal", h.Manifest.Store.Kind))
				}
				st, err := r.Reseal(cmd.Context())
				if err != nil {
					return failed(err)
				}
				if err := h.Audit(cmd.Context(), audit.Record{Action: audit.ActionStoreReseal, Actor: "cli", Target: "key:" + st.Key,
					Detail: map[string]string{"entries": fmt.Sprint(st.Entries), "values": fmt.Sprint(st.Values), "memories": fmt.Sprint(st.Memories), "changed": fmt.Sprint(st.Changed)}}); err != nil {
					return failed(err)
				}
				if jsonOut {
					return printJSON(cmd, st)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sealed with %s: %d entries, %d plugin values, %d memories (%d changed meanwhile)\n", st.Key, st.Entries, st.Values, st.Memories, st.Changed)
				return nil
			})
		}}
	rotate.Flags().BoolVar(&jsonOut, "json", false, "print what was sealed as JSON")
	cmd.AddCommand(keygen, rotate)
	return cmd
}
