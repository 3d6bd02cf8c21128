package host

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/sandbox"
)

// Plugins of kind "memory" (plugins/sdk/ABI.md): extract, after a run of a named user,
// proposes what to remember; rank, before a model call, orders what the search found.
// Both are Wasm in the sandbox like every hook. They act only through the host: extract
// returns texts, which the host stores as memories of the run's user (so a plugin cannot
// write another user's memory), and rank returns ids among the candidates (so it cannot
// show the model a memory the search did not find for this user).

// maxExtracted bounds the memories one run's extraction adds.
const maxExtracted = 20

type memoryPluginInput struct {
	User     string          `json:"user"`
	Agent    string          `json:"agent"`
	Session  string          `json:"session"`
	Run      string          `json:"run"`
	Status   loop.Status     `json:"status"`
	Messages []loop.Message  `json:"messages"`
	Known    []memoryForWasm `json:"known,omitempty"`
}

type memoryForWasm struct {
	ID      string      `json:"id"`
	Kind    memory.Kind `json:"kind"`
	Text    string      `json:"text"`
	Created string      `json:"created"`
	Score   float64     `json:"score,omitempty"`
}

func forWasm(h memory.Hit) memoryForWasm {
	return memoryForWasm{ID: h.ID, Kind: h.Kind, Text: h.Text, Created: h.Created.UTC().Format(time.RFC3339), Score: h.Score}
}

// memoryPlugins are the loaded plugins of kind memory that have export.
func (h *Host) memoryPlugins(export string) []*sandbox.Plugin {
	return h.memoryPluginsOf(h.plugins, export)
}

// memoryPluginsOf are the plugins of the set (in manifest order) of kind memory that
// have export.
func (h *Host) memoryPluginsOf(set []*sandbox.Plugin, export string) []*sandbox.Plugin {
	var out []*sandbox.Plugin
	for i, p := range set {
		if h.Manifest.Plugins[i].Kind == "memory" && hasExport(p, export) {
			out = append(out, p)
		}
	}
	return out
}

// extractMemories runs the extract hooks after a run of a named user and stores what they
// propose as that user's memories. The run has ended: a failure is reported (onErr), not
// the run's.
func (h *Host) extractMemories(ctx context.Context, g *generation, in loop.RunInput, agent string, res loop.RunResult, onErr func(error)) {
	plugins := h.memoryPluginsOf(g.plugins, "extract")
	ms, ok := h.Memory()
	if len(plugins) == 0 || !ok || in.User == "" || !h.Manifest.Memory.Enabled {
		return
	}
	entries, err := h.Store.Load(ctx, res.SessionID)
	if err != nil {
		onErr(fmt.Errorf("memory extract: %w", err))
		return
	}
	msgs, last := runMessages(entries, res.RunID)
	pin := memoryPluginInput{User: in.User, Agent: agent, Session: res.SessionID, Run: res.RunID, Status: res.Status, Messages: msgs}
	if last != "" {
		known, _ := ms.SearchMemory(ctx, memory.Query{User: in.User, Agent: agent, Text: last, Limit: 10})
		for _, k := range known {
			pin.Known = append(pin.Known, forWasm(k))
		}
	}
	for _, p := range plugins {
		var out struct {
			Memories []struct {
				Text     string            `json:"text"`
				Kind     memory.Kind       `json:"kind"`
				Metadata map[string]string `json:"metadata"`
			} `json:"memories"`
		}
		if err := callHook(ctx, p, "extract", pin, &out); err != nil {
			onErr(fmt.Errorf("memory plugin %q: %w", p.Name(), err))
			continue
		}
		if len(out.Memories) > maxExtracted {
			onErr(fmt.Errorf("memory plugin %q proposed %d memories, more than %d: the first %d are kept", p.Name(), len(out.Memories), maxExtracted, maxExtracted))
			out.Memories = out.Memories[:maxExtracted]
		}
		for _, m := range out.Memories {
			if err := addExtracted(ctx, ms, in.User, res, m.Text, m.Kind, m.Metadata); err != nil {
				onErr(fmt.Errorf("memory plugin %q: %w", p.Name(), err))
			}
		}
	}
}

// runMessages are the messages a run stored, and the text of its last user message.
func runMessages(entries []loop.Entry, run string) ([]loop.Message, string) {
	var msgs []loop.Message
	var last string
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.RunID == run && e.Message != nil {
			msgs = append(msgs, *e.Message)
			if e.Message.Role == loop.RoleUser {
				last = e.Message.Text()
			}
		}
	}
	return msgs, last
}

// addExtracted stores one extracted memory as the run's user's.
func addExtracted(ctx context.Context, ms memory.Store, user string, res loop.RunResult, text string, kind memory.Kind, meta map[string]string) error {
	if kind == "" {
		kind = memory.KindFact
	}
	e, err := memory.New(user, "", kind, text, time.Now())
	if err != nil {
		return err
	}
	e.Metadata, e.Session, e.Run = meta, res.SessionID, res.RunID
	return ms.AddMemory(ctx, e)
}

// rankMemories lets the rank hooks order hits, keeping only ids among them, at most n.
// A failing ranker leaves the search's order: recall degrades, the run goes on.
func rankMemories(ctx context.Context, rankers []*sandbox.Plugin, info loop.CallInfo, query string, hits []memory.Hit, n int) ([]memory.Hit, error) {
	for _, p := range rankers {
		in := struct {
			User       string          `json:"user"`
			Agent      string          `json:"agent"`
			Query      string          `json:"query"`
			Limit      int             `json:"limit"`
			Candidates []memoryForWasm `json:"candidates"`
		}{User: info.User, Agent: info.Agent, Query: query, Limit: n, Candidates: []memoryForWasm{}}
		byID := map[string]memory.Hit{}
		for _, h := range hits {
			in.Candidates = append(in.Candidates, forWasm(h))
			byID[h.ID] = h
		}
		var out struct {
			IDs []string `json:"ids"`
		}
		if err := callHook(ctx, p, "rank", in, &out); err != nil {
			return hits[:min(len(hits), n)], fmt.Errorf("memory plugin %q: %w", p.Name(), err)
		}
		ranked := make([]memory.Hit, 0, n)
		for _, id := range out.IDs {
			h, ok := byID[id]
			if !ok {
				continue // not a candidate: a ranker cannot add memories
			}
			delete(byID, id)
			ranked = append(ranked, h)
			if len(ranked) == n {
				break
			}
		}
		hits = ranked
	}
	return hits[:min(len(hits), n)], nil
}
