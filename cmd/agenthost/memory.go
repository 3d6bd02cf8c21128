package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/spf13/cobra"
)

// memoryFlags are the flags every memory subcommand shares.
type memoryFlags struct {
	user, agent, kind string
	json              bool
	limit             int
}

func (f *memoryFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.user, "user", "", "the user whose memories (a user's own)")
	cmd.Flags().StringVar(&f.agent, "agent", "", "the agent (without --user: the agent's memories shared by all its users)")
	cmd.Flags().StringVar(&f.kind, "kind", "", "fact or preference (default: both; add: fact)")
}

func (f *memoryFlags) filter() (memory.Filter, error) {
	if err := errors.Join(loop.CheckUser(f.user), loop.CheckUser(f.agent)); err != nil {
		return memory.Filter{}, err
	}
	if f.user == "" && f.agent == "" {
		return memory.Filter{}, errors.New("--user (or --agent, for an agent's shared memories) is required")
	}
	if f.kind != "" && f.kind != string(memory.KindFact) && f.kind != string(memory.KindPreference) {
		return memory.Filter{}, fmt.Errorf("--kind %q: want fact or preference", f.kind)
	}
	return memory.Filter{User: f.user, Agent: f.agent, Kind: memory.Kind(f.kind), Limit: f.limit}, nil
}

func withMemoryHost(cmd *cobra.Command, f func(*host.Host, memory.Store) error) error {
	return withStore(cmd, func(h *host.Host) error {
		ms, ok := h.Memory()
		if !ok {
			return failed(fmt.Errorf("the store in %s keeps no memories", h.Manifest.Path))
		}
		return f(h, ms)
	})
}

// auditMemoryDelete records a deletion of memories made from the command line.
func auditMemoryDelete(cmd *cobra.Command, h *host.Host, target string, n int) error {
	return h.Audit(cmd.Context(), audit.Record{Action: audit.ActionMemoryDelete, Actor: "cli", Target: target,
		Detail: map[string]string{"deleted": strconv.Itoa(n)}})
}

func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "List, search, add, delete and reindex long-term memories ([memory] in agent.toml)",
		Example: `  agenthost memory add --user ana "Ana prefers tea"
  agenthost memory search --user ana tea
  agenthost memory list --user ana --json
  agenthost memory rm mem_0123abcd4567ef89`}
	cmd.AddCommand(newMemoryListCmd(), newMemorySearchCmd(), newMemoryAddCmd(), newMemoryRmCmd(), newMemoryEraseCmd(), newMemoryReindexCmd())
	return cmd
}

func newMemoryListCmd() *cobra.Command {
	var mf memoryFlags
	cmd := &cobra.Command{Use: "list", Short: "List a user's (or an agent's shared) memories, newest first", Args: cobra.NoArgs,
		Example: "  agenthost memory list --user ana\n  agenthost memory list --agent helper --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := mf.filter()
			if err != nil {
				return usage(err)
			}
			return withMemoryHost(cmd, func(h *host.Host, ms memory.Store) error {
				if f.User, err = h.ResolveUser(cmd.Context(), f.User); err != nil {
					return failed(err)
				}
				entries, err := ms.ListMemory(cmd.Context(), f)
				if err != nil {
					return failed(err)
				}
				if mf.json {
					return printJSON(cmd, nonNilEntries(entries))
				}
				printMemories(cmd, entries, nil)
				return nil
			})
		}}
	mf.bind(cmd)
	cmd.Flags().IntVar(&mf.limit, "limit", 0, "at most this many (default all)")
	cmd.Flags().BoolVar(&mf.json, "json", false, "print JSON")
	return cmd
}

func newMemorySearchCmd() *cobra.Command {
	var mf memoryFlags
	cmd := &cobra.Command{Use: "search QUERY", Short: "Search the memories a run of --user with --agent would see, best first", Args: cobra.ExactArgs(1),
		Example: `  agenthost memory search --user ana "tea"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := mf.filter()
			if err != nil {
				return usage(err)
			}
			return withMemoryHost(cmd, func(h *host.Host, ms memory.Store) error {
				if f.User, err = h.ResolveUser(cmd.Context(), f.User); err != nil {
					return failed(err)
				}
				hits, err := ms.SearchMemory(cmd.Context(), memory.Query{User: f.User, Agent: f.Agent, Kind: f.Kind, Text: args[0], Limit: mf.limit})
				if err != nil {
					return failed(err)
				}
				noteEmbeddingSpend(cmd, h)
				if mf.json {
					if hits == nil {
						hits = []memory.Hit{}
					}
					return printJSON(cmd, hits)
				}
				entries := make([]memory.Entry, len(hits))
				scores := make([]float64, len(hits))
				for i, h := range hits {
					entries[i], scores[i] = h.Entry, h.Score
				}
				printMemories(cmd, entries, scores)
				return nil
			})
		}}
	mf.bind(cmd)
	cmd.Flags().IntVar(&mf.limit, "limit", 10, "at most this many")
	cmd.Flags().BoolVar(&mf.json, "json", false, "print JSON")
	return cmd
}

func newMemoryAddCmd() *cobra.Command {
	var mf memoryFlags
	cmd := &cobra.Command{Use: "add TEXT", Short: "Add a memory for --user, or for all users of --agent", Args: cobra.ExactArgs(1),
		Example: "  agenthost memory add --user ana --kind preference \"Answers in French\"\n  agenthost memory add --agent helper \"The office opens at nine\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := mf.filter()
			if err != nil {
				return usage(err)
			}
			e, err := memory.New(f.User, f.Agent, f.Kind, args[0], time.Now())
			if err != nil {
				return usage(err)
			}
			e.Metadata = map[string]string{"source": "cli"}
			return withMemoryHost(cmd, func(h *host.Host, ms memory.Store) error {
				if e.User, err = h.ResolveUser(cmd.Context(), e.User); err != nil {
					return failed(err)
				}
				if err := ms.AddMemory(cmd.Context(), e); err != nil {
					return failed(err)
				}
				noteEmbeddingSpend(cmd, h)
				if mf.json {
					return printJSON(cmd, e)
				}
				fmt.Fprintln(cmd.OutOrStdout(), e.ID)
				return nil
			})
		}}
	mf.bind(cmd)
	cmd.Flags().BoolVar(&mf.json, "json", false, "print the entry as JSON")
	return cmd
}

func newMemoryRmCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{Use: "rm ID...", Short: "Delete memories by id", Args: cobra.MinimumNArgs(1),
		Example: "  agenthost memory rm mem_0123abcd4567ef89\n  agenthost memory rm --user ana mem_0123abcd4567ef89",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemoryHost(cmd, func(h *host.Host, ms memory.Store) error {
				user, err := h.ResolveUser(cmd.Context(), user)
				if err != nil {
					return failed(err)
				}
				var missing []string
				for _, id := range args {
					n, err := ms.DeleteMemory(cmd.Context(), memory.Filter{ID: id, User: user})
					if err != nil {
						return failed(err)
					}
					if n == 0 {
						missing = append(missing, id)
					} else if err := auditMemoryDelete(cmd, h, id, n); err != nil {
						return failed(err)
					}
				}
				if removed := len(args) - len(missing); removed > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", plural(removed, "memory"))
				}
				if len(missing) > 0 {
					return failed(fmt.Errorf("no memory %s", strings.Join(missing, ", ")))
				}
				return nil
			})
		}}
	cmd.Flags().StringVar(&user, "user", "", "only if the memory is this user's")
	return cmd
}

func newMemoryEraseCmd() *cobra.Command {
	var mf memoryFlags
	cmd := &cobra.Command{Use: "erase", Short: "Delete every memory and preference of --user (or every shared one of --agent)", Args: cobra.NoArgs,
		Example: "  agenthost memory erase --user ana",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := mf.filter()
			if err != nil {
				return usage(err)
			}
			return withMemoryHost(cmd, func(h *host.Host, ms memory.Store) error {
				if f.User, err = h.ResolveUser(cmd.Context(), f.User); err != nil {
					return failed(err)
				}
				n, err := ms.DeleteMemory(cmd.Context(), f)
				if err != nil {
					return failed(err)
				}
				if err := auditMemoryDelete(cmd, h, "user:"+f.User+" agent:"+f.Agent, n); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "erased %s\n", plural(int(n), "memory"))
				return nil
			})
		}}
	mf.bind(cmd)
	return cmd
}

func printMemories(cmd *cobra.Command, entries []memory.Entry, scores []float64) {
	if len(entries) == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "no memories")
		return
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tAGENT\tKIND\tCREATED\tTEXT")
	for i, e := range entries {
		text := strings.Join(strings.Fields(e.Text), " ")
		if len(scores) > i {
			text = fmt.Sprintf("%s  (score %.3g)", text, scores[i])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, dash(e.User), dash(e.Agent), e.Kind, e.Created.Local().Format(time.DateTime), text)
	}
	tw.Flush()
}

func nonNilEntries(e []memory.Entry) []memory.Entry {
	if e == nil {
		return []memory.Entry{}
	}
	return e
}
