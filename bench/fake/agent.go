package fake

import "github.com/agenthost/agenthost/loop"

// Agent is the agent every loop row runs: Model (or m) with the "add" tool on store.
func Agent(m loop.Model, store loop.SessionStore) (*loop.Agent, error) {
	tools, err := loop.NewToolSet(AddTool())
	if err != nil {
		return nil, err
	}
	return loop.New(loop.Config{Name: "bench", SystemPrompt: "sys", Model: m, Tools: tools, Store: store})
}
