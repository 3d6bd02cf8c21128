package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/agenthost/agenthost/eval"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/spf13/cobra"
)

// replayProvider is the name eval --replay gives the scripted provider it adds.
const replayProvider = "replay"

func newSessionsExportCmd() *cobra.Command {
	var dir, id string
	cmd := &cobra.Command{
		Use:   "export ID --fixture DIR",
		Short: "Write a session's last run as a replay fixture: the model's answers, the tools' results and an eval case",
		Long: `export writes what replaying the session's last run needs into DIR: model.json, the scripted provider's story of the model's answers; tools.json, the
tools' results; and cases.jsonl, an eval case whose expectations are what the run did (its
status, its tool calls in order with their arguments and results, its final text).

A DIR that already holds a fixture gets the run added to it. eval's replay option then reruns
every case offline, deterministically, with the tools run live or their results replayed.`,
		Example: `  agenthost sessions export ses_0123abcd --fixture evals/refund
  agenthost sessions export ses_4567ef01 --fixture evals/refund --id late-refund`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usage(fmt.Errorf("--fixture DIR is required"))
			}
			return withStore(cmd, func(h *host.Host) error {
				entries, err := h.Store.Load(cmd.Context(), args[0])
				if err != nil {
					return failed(err)
				}
				if len(entries) == 0 {
					return usage(fmt.Errorf("no session %q in %s", args[0], h.Manifest.Store.Where()))
				}
				name := id
				if name == "" {
					name = args[0]
				}
				rec, err := eval.Record(name, entries)
				if err != nil {
					return failed(fmt.Errorf("session %s: %w", args[0], err))
				}
				if err := exportFixture(dir, rec); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "case %s: %d model answers, %d tool calls → %s\n", name, len(rec.Turns), len(rec.Tools), dir)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&dir, "fixture", "", "the fixture directory to write (or add to)")
	cmd.Flags().StringVar(&id, "id", "", "the case's id (default: the session id)")
	return cmd
}

// exportFixture adds recordings to the fixture in dir and writes it.
func exportFixture(dir string, recs ...*eval.Recording) error {
	f, err := eval.OpenFixture(dir)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := f.Add(rec); err != nil {
			return err
		}
	}
	return f.Write()
}

// replayManifest loads the manifest and adds the scripted provider that replays the
// fixture in dir as its provider "replay" (the dataset is the fixture's cases unless
// given). The adapter is found as a manifest's bare command is: next to this binary,
// else on PATH.
func replayManifest(cmd *cobra.Command, dir string) (*manifest.Manifest, error) {
	if _, err := os.Stat(filepath.Join(dir, eval.FixtureModel)); err != nil {
		return nil, usage(fmt.Errorf("--replay %s: %w (write one with sessions export --fixture or eval record)", dir, err))
	}
	if _, err := eval.OpenFixture(dir); err != nil {
		return nil, usage(fmt.Errorf("--replay: %w", err))
	}
	m, err := manifest.LoadWith(manifestPath(cmd), lockMode(cmd))
	if err != nil {
		return nil, err
	}
	if _, taken := m.Providers[replayProvider]; taken {
		return nil, usage(fmt.Errorf("--replay: the manifest has its own [providers.%s]; eval --replay adds one by that name", replayProvider))
	}
	script, err := filepath.Abs(filepath.Join(dir, eval.FixtureModel))
	if err != nil {
		return nil, err
	}
	command := "agenthost-provider-scripted"
	if exe, err := os.Executable(); err == nil {
		if beside := filepath.Join(filepath.Dir(exe), command); isExecutable(beside) {
			command = beside
		}
	}
	if m.Providers == nil {
		m.Providers = map[string]manifest.ProviderConfig{}
	}
	m.Providers[replayProvider] = manifest.ProviderConfig{Command: command, Options: map[string]string{"script": script}}
	return m, nil
}

// replayTools is what --tools says of a fixture's tools: nil to run them live, or an
// answer from tools.json for each call, by its call id (the replayed model makes the
// recorded calls with their recorded ids). A call the recording does not have, or has
// with another tool or other arguments, gets an error result saying so.
func replayTools(dir, mode string) (func(loop.ToolCall) loop.ToolResult, error) {
	switch mode {
	case "live":
		return nil, nil
	case "replay":
	default:
		return nil, usage(fmt.Errorf("--tools %q: live or replay", mode))
	}
	f, err := eval.OpenFixture(dir)
	if err != nil {
		return nil, usage(fmt.Errorf("--replay: %w", err))
	}
	byID := make(map[string]eval.ToolRecord, len(f.Tools.Calls))
	for _, t := range f.Tools.Calls {
		byID[t.ID] = t
	}
	return func(c loop.ToolCall) loop.ToolResult {
		t, ok := byID[c.ID]
		switch {
		case !ok:
			return loop.ErrorResult(fmt.Sprintf("replay: %s has no recorded result for call %s (%s %s)", dir, c.ID, c.Name, c.Arguments))
		case t.Name != c.Name || !sameJSON(t.Arguments, []byte(c.Arguments)):
			return loop.ErrorResult(fmt.Sprintf("replay: the recorded call %s is %s %s, this one is %s %s", c.ID, t.Name, t.Arguments, c.Name, c.Arguments))
		case t.IsError:
			return loop.ErrorResult(t.Content)
		}
		return loop.TextResult(t.Content)
	}, nil
}

// sameJSON reports whether two JSON documents are the same value (key order and
// spacing aside).
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
