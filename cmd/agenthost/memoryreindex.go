package main

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/providers"
	"github.com/spf13/cobra"
)

func newMemoryReindexCmd() *cobra.Command {
	var user string
	var batch int
	cmd := &cobra.Command{Use: "reindex", Short: "Embed the memories that have no vector of the [memory.embeddings] model", Args: cobra.NoArgs,
		Long: `Embed the memories stored before [memory.embeddings] was set, or embedded by another
model, with the configured one: they are then found by meaning as well as by their words.
--batch memories go to the provider per call, and each batch's vectors are stored before the
next is sent; a line says how far it got after each. It embeds only what still lacks a
vector of the current model, so an interrupted reindex resumes when run again, and one with
nothing to do does nothing. Its embeddings are charged to no run: their tokens are printed.`,
		Example: "  agenthost memory reindex\n  agenthost memory reindex --user ana --batch 16",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loop.CheckUser(user); err != nil {
				return usage(err)
			}
			if batch < 1 || batch > providers.MaxEmbedInputs {
				return usage(fmt.Errorf("--batch %d: want 1 to %d", batch, providers.MaxEmbedInputs))
			}
			return withMemoryHost(cmd, func(h *host.Host, _ memory.Store) error {
				out := cmd.OutOrStdout()
				st, err := h.ReindexMemory(cmd.Context(), user, batch, func(r host.Reindexed) {
					fmt.Fprintf(out, "embedded %d/%d memories (%s)\n", r.Done, r.Total, spend(r.Usage))
				})
				if errors.Is(err, host.ErrNoEmbeddings) {
					return usage(err)
				}
				if err != nil {
					return failed(fmt.Errorf("reindex stopped after %d of %d memories (run it again to resume): %w", st.Done, st.Total, err))
				}
				if st.Done == 0 {
					fmt.Fprintln(out, "nothing to reindex: every memory has a vector of the current model")
					return nil
				}
				fmt.Fprintf(out, "reindexed %d memories (%s, charged to no run)\n", st.Done, spend(st.Usage))
				return nil
			})
		}}
	cmd.Flags().StringVar(&user, "user", "", "only this user's memories (default: every user's and every agent's)")
	cmd.Flags().IntVar(&batch, "batch", host.DefaultReindexBatch, "memories per embedding call (1 to 256)")
	return cmd
}

// spend says what embeddings cost: tokens, and dollars when known.
func spend(u loop.Usage) string {
	if u.CostUSD > 0 {
		return fmt.Sprintf("%d tokens, $%.6f", u.TotalTokens, u.CostUSD)
	}
	return fmt.Sprintf("%d tokens", u.TotalTokens)
}

// noteEmbeddingSpend tells, on stderr, what a command's embeddings cost: they were made
// for no run, so no run's usage shows them.
func noteEmbeddingSpend(cmd *cobra.Command, h *host.Host) {
	if u := h.EmbeddingSpend(); u.TotalTokens > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "agenthost: embeddings: %s, charged to no run\n", spend(u))
	}
}
