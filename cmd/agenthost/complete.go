package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/manifest"
)

// Shell completion of the names a command takes: plugins, tools, agents, providers and
// sessions, read from the manifest named by -c (and, for sessions and the tools of
// plugins that declare none, from the store and the plugins themselves).
//
// Completion runs on every TAB, so it never fails loudly and never changes anything:
// a manifest that does not load completes nothing, a SQLite file that does not exist is
// not created (no sessions), and everything it opens is bounded by completeTimeout.
// Plugins it loads run in their sandbox with the manifest's permissions, as "plugins
// list" loads them, from the compilation cache.

// completeTimeout bounds one completion: a shell waiting on TAB is worse than no answer.
const completeTimeout = 5 * time.Second

type completeFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

// completeManifest loads the manifest quietly; nil when it does not load. It writes no
// agent.lock (completion changes nothing), and honours --locked when it is given.
func completeManifest(cmd *cobra.Command) *manifest.Manifest {
	mode := lockMode(cmd)
	if mode == manifest.LockUpdate {
		mode = manifest.LockOff
	}
	m, err := manifest.LoadWith(manifestPath(cmd), mode)
	if err != nil {
		return nil
	}
	return m
}

// matching keeps the candidates that start with prefix, sorted, without repeats.
func matching(names []string, prefix string) []string {
	out := []string{}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// completeAt completes the positional argument at index i with names; other positions
// complete nothing (not even files).
func completeAt(i int, names func(cmd *cobra.Command, args []string) []string) completeFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) != i {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return matching(names(cmd, args), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeEach completes every positional argument with names (sessions rm ID...).
func completeEach(names func(cmd *cobra.Command, args []string) []string) completeFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, n := range matching(names(cmd, args), toComplete) {
			if !slices.Contains(args, n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func flagValues(names func(cmd *cobra.Command, args []string) []string) completeFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return matching(names(cmd, args), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func fixedValues(vals ...string) completeFunc {
	return flagValues(func(*cobra.Command, []string) []string { return vals })
}

// pluginNames are the manifest's plugins and MCP servers: what "plugins call" takes.
func pluginNames(cmd *cobra.Command, _ []string) []string {
	m := completeManifest(cmd)
	if m == nil {
		return nil
	}
	var out []string
	for _, p := range m.Plugins {
		out = append(out, p.Name)
	}
	for _, s := range m.MCPServers {
		out = append(out, s.Name)
	}
	return out
}

func providerNames(cmd *cobra.Command, _ []string) []string {
	m := completeManifest(cmd)
	if m == nil {
		return nil
	}
	var out []string
	for name := range m.Providers {
		out = append(out, name)
	}
	return out
}

func agentNames(cmd *cobra.Command, _ []string) []string {
	if m := completeManifest(cmd); m != nil {
		return m.AgentNames()
	}
	return nil
}

func workflowNames(cmd *cobra.Command, _ []string) []string {
	if m := completeManifest(cmd); m != nil {
		return m.WorkflowNames()
	}
	return nil
}

// pluginToolNames are the tools of the plugin named by args[0]: declared in the manifest
// when it declares them (extism and wasi ABIs), else listed by the plugin itself.
func pluginToolNames(cmd *cobra.Command, args []string) []string {
	m := completeManifest(cmd)
	if m == nil || len(args) == 0 {
		return nil
	}
	for _, p := range m.Plugins {
		if p.Name != args[0] {
			continue
		}
		if len(p.Tools) > 0 {
			var out []string
			for _, t := range p.Tools {
				out = append(out, t.Name)
			}
			return out
		}
		one := *m
		one.Plugins, one.MCPServers = []manifest.PluginConfig{p}, nil
		return loadedTools(cmd, &one, func(t host.ToolEntry) string { return t.Tool })
	}
	return nil
}

// modelToolNames are the names the model sees (run --tools, --tool-choice): every
// plugin and MCP server is loaded, as a run loads them.
func modelToolNames(cmd *cobra.Command, _ []string) []string {
	m := completeManifest(cmd)
	if m == nil {
		return nil
	}
	return loadedTools(cmd, m, func(t host.ToolEntry) string { return t.Name })
}

// loadedTools opens the host on m without a provider and with a throwaway store (so no
// database is created or touched) and names its tools with name.
func loadedTools(cmd *cobra.Command, m *manifest.Manifest, name func(host.ToolEntry) string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	quiet := *m
	quiet.Store = manifest.StoreConfig{Kind: "memory"}
	h, err := host.Open(ctx, host.Options{Loaded: &quiet, NoProvider: true})
	if err != nil {
		return nil
	}
	defer h.Close()
	var out []string
	for _, t := range h.ToolList() {
		out = append(out, name(t))
	}
	return out
}

// sessionIDs are the stored sessions, most recent first in the store but sorted here
// (shells sort anyway). A SQLite file that is not there has no sessions and is not made.
func sessionIDs(cmd *cobra.Command, _ []string) []string {
	m := completeManifest(cmd)
	if m == nil || m.Store.Kind == "memory" {
		return nil
	}
	if m.Store.Kind != "postgres" {
		if _, err := os.Stat(m.Store.Path); err != nil {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	only := *m
	only.Plugins, only.MCPServers = nil, nil
	h, err := host.Open(ctx, host.Options{Loaded: &only, NoProvider: true})
	if err != nil {
		return nil
	}
	defer h.Close()
	ss, err := h.Sessions(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// registerCompletions wires the completers into the command tree by command path, so
// the commands' own files stay about what they do.
func registerCompletions(root *cobra.Command) {
	find := func(path ...string) *cobra.Command {
		c, _, err := root.Find(path)
		if err != nil || c == root {
			panic("completion for a command that does not exist: " + strings.Join(path, " "))
		}
		return c
	}
	flag := func(c *cobra.Command, name string, f completeFunc) {
		if err := c.RegisterFlagCompletionFunc(name, f); err != nil {
			panic(err)
		}
	}
	run := find("run")
	flag(run, "provider", flagValues(providerNames))
	flag(run, "agent", flagValues(agentNames))
	flag(run, "session", flagValues(sessionIDs))
	flag(run, "tools", flagValues(modelToolNames))
	flag(run, "tool-choice", func(cmd *cobra.Command, args []string, p string) ([]string, cobra.ShellCompDirective) {
		return matching(append([]string{"auto", "none", "required"}, modelToolNames(cmd, args)...), p), cobra.ShellCompDirectiveNoFileComp
	})
	flag(run, "approve", fixedValues("ask", "all", "none"))

	call := find("plugins", "call")
	call.ValidArgsFunction = func(cmd *cobra.Command, args []string, p string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0: // a plugin of the manifest, or a .wasm file
			return matching(pluginNames(cmd, args), p), cobra.ShellCompDirectiveDefault
		case 1:
			return matching(pluginToolNames(cmd, args), p), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	find("plugins", "inspect").ValidArgsFunction = func(cmd *cobra.Command, args []string, p string) ([]string, cobra.ShellCompDirective) {
		if len(args) != 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return matching(pluginNames(cmd, args), p), cobra.ShellCompDirectiveDefault
	}
	find("sessions", "show").ValidArgsFunction = completeAt(0, sessionIDs)
	find("sessions", "fork").ValidArgsFunction = completeAt(0, sessionIDs)
	find("sessions", "diff").ValidArgsFunction = completeEach(sessionIDs)
	find("workflow", "run").ValidArgsFunction = completeAt(0, workflowNames)
	find("sessions", "rm").ValidArgsFunction = completeEach(sessionIDs)
	find("sessions", "feedback").ValidArgsFunction = completeAt(0, sessionIDs)
}
