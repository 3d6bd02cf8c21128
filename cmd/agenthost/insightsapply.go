package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/insights"
)

// actionInsightsApply is the audit action of an applied suggestion.
const actionInsightsApply = "insights.apply"

// applyFlags are how the user completes a suggestion: the tool that stands in, or
// turning the tool off; the limit's new value; the words of a prompt addition.
type applyFlags struct {
	since, fallback, value, text string
	disable, dryRun              bool
}

func newInsightsApplyCmd() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply ID [--dry-run] [--fallback TOOL | --disable] [--value V] [--text TEXT]",
		Short: "Apply a suggestion of \"insights suggest\" to agent.toml, audited",
		Long: `Compute the suggestions again (same --since), find ID among them and write its change into
the manifest given by -c as a minimal edit: the rest of the file (comments, order, spacing)
stays as it is. A fallback suggestion takes --fallback TOOL ([tools.NAME] fallback) or
--disable (an [[approvals]] deny rule put first); a cap doubles the limit, or sets --value;
a prompt suggestion appends --text to [agent] system_prompt. Reviews are yours to make:
they have nothing to apply.

The edited file must load as a manifest, every check, or nothing is written; an ID computed
against another version of the file is refused (run "insights suggest" again); the file is
replaced atomically, a symlink through its target. Each apply is recorded in the audit log
(insights.apply) before the file changes. --dry-run prints the change and writes nothing.`,
		Example: `  agenthost insights apply 3f2a9c1b-77aa01de --dry-run
  agenthost insights apply 3f2a9c1b-77aa01de --fallback search_backup
  agenthost insights apply 0c1d2e3f-77aa01de --text "When the quota is exceeded, say so and stop."`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			window, err := windowFlag("--since", f.since)
			if err != nil {
				return usage(err)
			}
			if f.disable && f.fallback != "" {
				return usage(errors.New("--fallback and --disable: choose one"))
			}
			return withStore(cmd, func(h *host.Host) error { return applySuggestion(cmd, h, args[0], window, f) })
		},
	}
	cmd.Flags().StringVar(&f.since, "since", "7d", "the window the suggestion was computed over")
	cmd.Flags().StringVar(&f.fallback, "fallback", "", "fallback: the tool that stands in when the failing one fails")
	cmd.Flags().BoolVar(&f.disable, "disable", false, "fallback: refuse the failing tool's calls instead (a deny rule)")
	cmd.Flags().StringVar(&f.value, "value", "", "cap: the limit's new value (default: twice the current one)")
	cmd.Flags().StringVar(&f.text, "text", "", "prompt: what to add to the system prompt")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the change; write nothing")
	return cmd
}

func applySuggestion(cmd *cobra.Command, h *host.Host, id string, window time.Duration, f applyFlags) error {
	path := h.Manifest.Path
	data, err := os.ReadFile(path)
	if err != nil {
		return failed(err)
	}
	r, err := insights.Compute(cmd.Context(), h.Store, time.Now().Add(-window))
	if err != nil {
		return failed(err)
	}
	sug := insights.Suggest(r)
	insights.Stamp(sug, data)
	s, err := insights.Find(sug, id, data)
	if errors.Is(err, insights.ErrUnknownSuggestion) {
		return usage(fmt.Errorf("%w in the last %s: \"insights suggest\" lists the current ones", err, f.since))
	} else if err != nil {
		return failed(err)
	}
	e, err := editFor(s, h, data, f)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s [%s] %s\n  because %s\n%s", s.ID, s.Kind, e.what, s.Evidence, lineDiff(path, data, e.data))
	if f.dryRun {
		fmt.Fprintln(out, "dry run: nothing written")
		return nil
	}
	written, err := filepath.EvalSymlinks(path)
	if err != nil {
		return failed(err)
	}
	rec := audit.Record{Action: actionInsightsApply, Actor: "cli", Target: s.ID, Detail: applyDetail(s, e, written, data)}
	if _, err := manifestReplace(path, data, e.data, func() error { return h.Audit(cmd.Context(), rec) }); err != nil {
		return failed(err)
	}
	fmt.Fprintf(out, "applied to %s: the next run uses it\n", written)
	return nil
}

// applyDetail is what the audit record says: the suggestion and its evidence, the
// change, and the file before and after (digests and the changed lines).
func applyDetail(s insights.Suggestion, e edit, written string, before []byte) map[string]string {
	var ex []string
	for _, x := range s.Examples {
		ex = append(ex, x.Session+"/"+x.Run)
	}
	old, added := changedLines(before, e.data)
	d := map[string]string{"kind": s.Kind, "target": s.Target, "evidence": s.Evidence, "change": e.what, "file": written,
		"before": old, "after": added, "before_sha256": manifestDigest(before), "after_sha256": manifestDigest(e.data)}
	if len(ex) > 0 {
		d["examples"] = strings.Join(ex, " ")
	}
	return d
}

func manifestDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// changedLines are the lines of a that b replaces and b's in their place (the common
// lines before and after left out).
func changedLines(a, b []byte) (old, added string) {
	al, bl := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	p := commonPrefixLines(a, b)
	s := 0
	for s < len(al)-p && s < len(bl)-p && al[len(al)-1-s] == bl[len(bl)-1-s] {
		s++
	}
	return strings.Join(al[p:len(al)-s], ""), strings.Join(bl[p:len(bl)-s], "")
}

// lineDiff shows the change as a unified diff's one hunk, without context lines.
func lineDiff(path string, a, b []byte) string {
	old, added := changedLines(a, b)
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n@@ line %d @@\n", path, path, commonPrefixLines(a, b)+1)
	for _, l := range splitLines(old) {
		fmt.Fprintf(&w, "-%s\n", l)
	}
	for _, l := range splitLines(added) {
		fmt.Fprintf(&w, "+%s\n", l)
	}
	return w.String()
}

func commonPrefixLines(a, b []byte) int {
	al, bl := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	return p
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
