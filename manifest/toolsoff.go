package manifest

import (
	"fmt"

	"github.com/BurntSushi/toml"
)

// ToolList is an agent's tools key: the loaded tools it may use, by the names the model
// sees (a list; [] is none of them), or a switch: true is the default (all of them) and
// false turns tools off for the agent's runs (AgentConfig.ToolsOff: no tool is offered
// to its model, not even a client's or a team's, and a call it makes anyway is refused;
// docs/loop.md, "Tools off").
type ToolList []string

// UnmarshalTOML implements toml.Unmarshaler.
func (t *ToolList) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case bool:
		*t = nil
		if !x {
			*t = ToolList{} // markToolsOff tells it from tools = [] by the key's type
		}
		return nil
	case []any:
		out := make(ToolList, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok || s == "" {
				return fmt.Errorf("want tool names, true or false, got %v", e)
			}
			out = append(out, s)
		}
		*t = out
		return nil
	}
	return fmt.Errorf("want a list of tool names, true or false, got %T", v)
}

// markToolsOff sets ToolsOff on each agent whose tools key is false.
func (m *Manifest) markToolsOff(md toml.MetaData) {
	off := func(a *AgentConfig, key ...string) {
		if md.Type(append(key, "tools")...) == "Bool" && a.Tools != nil {
			a.Tools, a.ToolsOff = nil, true
		}
	}
	off(&m.Agent, "agent")
	for name, a := range m.Agents {
		off(&a, "agents", name)
		m.Agents[name] = a
	}
}
