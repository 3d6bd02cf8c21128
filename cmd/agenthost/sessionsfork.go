package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/spf13/cobra"
)

// forkFlags are `sessions fork`'s: the point and the typed edits.
type forkFlags struct {
	at                     int64
	replace                []string // CALL_ID=TEXT
	replaceFile            []string // CALL_ID=PATH
	editUser               string
	dropUser, dropTurn     bool
	user                   string
	jsonOut, editUserIsSet bool
}

func newForkCmd() *cobra.Command {
	var f forkFlags
	cmd := &cobra.Command{
		Use: "fork ID --at SEQ", Short: "Make a new session whose history is ID's up to entry SEQ, with typed edits", Args: cobra.ExactArgs(1),
		Long: `Fork copies a session's messages up to entry SEQ (sessions show numbers the entries
with its seq flag) into a new session; the original is not changed. Edits change the copy, in this order: --drop-last-turn,
--drop-last-user, --edit-last-user, then each --replace-result. The result must stay a
conversation every provider accepts, or the fork is refused with the reason. The new
session's id is printed; run continues it like any session.`,
		Example: `  agenthost sessions fork ses_0123abcd --at 8 --replace-result call_1='{"temp": 21}'
  agenthost sessions fork ses_0123abcd --at 14 --edit-last-user "and in Fahrenheit?"
  agenthost sessions fork ses_0123abcd --at 12 --drop-last-turn --user ana`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.editUserIsSet = cmd.Flags().Changed("edit-last-user")
			edits, err := f.edits()
			if err != nil {
				return usage(err)
			}
			return withStore(cmd, func(h *host.Host) error {
				p := h.Local(cmd.Context(), f.user)
				id, lin, err := h.Door().Fork(cmd.Context(), p, loop.ForkRequest{Session: args[0], At: f.at, Edits: edits})
				switch {
				case errors.Is(err, access.ErrNotVisible):
					return failed(fmt.Errorf("no session %q in %s", args[0], h.Manifest.Store.Where()))
				case errors.Is(err, loop.ErrInvalidEdit):
					return usage(err)
				case err != nil:
					return failed(err)
				}
				if f.jsonOut {
					return printJSON(cmd, map[string]any{"session": id, "lineage": lin})
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
				fmt.Fprintf(cmd.ErrOrStderr(), "forked %s at entry %d into %s (%d entries); continue it with: agenthost run --session %s\n", lin.Parent, lin.At, id, lin.Base, id)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&f.at, "at", 0, "the entry of ID the fork ends at (sessions show --seq numbers them)")
	fl.StringArrayVar(&f.replace, "replace-result", nil, "CALL_ID=TEXT: the fork's result of that tool call says TEXT (repeatable)")
	fl.StringArrayVar(&f.replaceFile, "replace-result-file", nil, "CALL_ID=PATH: as --replace-result, the text read from a file")
	fl.StringVar(&f.editUser, "edit-last-user", "", "the new text of the last user message (it must be the fork's last message)")
	fl.BoolVar(&f.dropUser, "drop-last-user", false, "drop the last user message (it must be the fork's last message)")
	fl.BoolVar(&f.dropTurn, "drop-last-turn", false, "drop the last user message and everything after it")
	fl.StringVar(&f.user, "user", os.Getenv("AGENTHOST_USER"), "whose the fork is (default $AGENTHOST_USER)")
	fl.BoolVar(&f.jsonOut, "json", false, "print {session, lineage} as JSON")
	_ = cmd.MarkFlagRequired("at")
	return cmd
}

// edits are the flags' typed edits, in the documented order.
func (f forkFlags) edits() ([]loop.Edit, error) {
	var out []loop.Edit
	if f.dropTurn {
		out = append(out, loop.Edit{Op: loop.EditDropLastTurn})
	}
	if f.dropUser {
		out = append(out, loop.Edit{Op: loop.EditDropLastUser})
	}
	if f.editUserIsSet {
		out = append(out, loop.Edit{Op: loop.EditLastUser, Content: f.editUser})
	}
	for _, r := range f.replace {
		id, text, ok := strings.Cut(r, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--replace-result %q: want CALL_ID=TEXT", r)
		}
		out = append(out, loop.Edit{Op: loop.EditReplaceToolResult, CallID: id, Content: text})
	}
	for _, r := range f.replaceFile {
		id, path, ok := strings.Cut(r, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--replace-result-file %q: want CALL_ID=PATH", r)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--replace-result-file: %w", err)
		}
		out = append(out, loop.Edit{Op: loop.EditReplaceToolResult, CallID: id, Content: string(b)})
	}
	return out, nil
}

func newDiffCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use: "diff A B", Short: "Show two related sessions side by side from where they part, with their cost", Args: cobra.ExactArgs(2),
		Example: `  agenthost sessions diff ses_0123abcd ses_4567ef01
  agenthost sessions diff ses_0123abcd ses_4567ef01 --json | jq '.b.cost_usd - .a.cost_usd'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(h *host.Host) error {
				c, err := h.Door().Compare(cmd.Context(), h.Local(cmd.Context(), ""), args[0], args[1])
				switch {
				case errors.Is(err, access.ErrNotVisible):
					return failed(fmt.Errorf("no session %q or %q in %s", args[0], args[1], h.Manifest.Store.Where()))
				case errors.Is(err, loop.ErrUnrelated):
					return usage(err)
				case err != nil:
					return failed(err)
				}
				if jsonOut {
					return printJSON(cmd, c)
				}
				return printComparison(cmd.OutOrStdout(), c)
			})
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print {a, b} as JSON: each side's session, from, messages, runs, tokens, cost_usd")
	return cmd
}

// printComparison prints the two sides in columns, a message a row, then their runs,
// tokens and cost.
func printComparison(out io.Writer, c loop.Comparison) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintf(w, "\t%s (after entry %d)\t%s (after entry %d)\n", c.A.Session, c.A.From, c.B.Session, c.B.From)
	for i := 0; i < max(len(c.A.Messages), len(c.B.Messages)); i++ {
		fmt.Fprintf(w, "%d\t%s\t%s\n", i+1, messageCell(c.A.Messages, i), messageCell(c.B.Messages, i))
	}
	fmt.Fprintf(w, "runs\t%d\t%d\n", c.A.Runs, c.B.Runs)
	fmt.Fprintf(w, "tokens\t%d\t%d\n", c.A.Tokens, c.B.Tokens)
	fmt.Fprintf(w, "cost\t$%.4f\t$%.4f\n", c.A.CostUSD, c.B.CostUSD)
	return w.Flush()
}

// messageCell is message i of one side, on one line ("" past its end).
func messageCell(ms []loop.Message, i int) string {
	if i >= len(ms) {
		return ""
	}
	var b strings.Builder
	printMessage(&b, ms[i])
	return preview(strings.ReplaceAll(b.String(), "\t", " "), 60)
}
