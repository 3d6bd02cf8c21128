package manifest

import (
	"strings"
	"testing"
)

// [agent] tools = false turns tools off (ToolsOff); a list still names the tools,
// [] still means none of them (tools on), true the default; another value is an error
// at the key.
func TestAgentToolsFalseTurnsToolsOff(t *testing.T) {
	for _, tc := range []struct {
		value string
		off   bool
		tools ToolList
	}{{"false", true, nil}, {"true", false, nil}, {`["count_words"]`, false, ToolList{"count_words"}}, {"[]", false, ToolList{}}} {
		body := strings.Replace(goodManifest, "max_iterations = 7", "max_iterations = 7\ntools = "+tc.value, 1) +
			"\n[agents.helper]\nsystem_prompt = \"x\"\ntools = " + tc.value + "\n"
		m, err := Load(writeManifest(t, body))
		if err != nil {
			t.Fatalf("tools = %s: %v", tc.value, err)
		}
		for _, a := range []AgentConfig{m.Agent, m.Agents["helper"]} {
			if a.ToolsOff != tc.off || (a.Tools == nil) != (tc.tools == nil) || strings.Join(a.Tools, ",") != strings.Join(tc.tools, ",") {
				t.Fatalf("tools = %s: off %v tools %#v", tc.value, a.ToolsOff, a.Tools)
			}
		}
	}
	_, err := Load(writeManifest(t, strings.Replace(goodManifest, "max_iterations = 7", "max_iterations = 7\ntools = 3", 1)))
	if err == nil || !strings.Contains(err.Error(), "agent.tools") || !strings.Contains(err.Error(), "true or false") {
		t.Fatalf("tools = 3: %v", err)
	}
}
