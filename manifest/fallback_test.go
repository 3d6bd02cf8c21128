package manifest

import (
	"regexp"
	"strings"
	"testing"
)

// A fallback list holds names and { tool, arguments } tables, in a [tools.NAME] table
// (any tool, by the name the model sees) or on a [[plugins.tools]] entry. Anything else
// is an error naming the file, the line and the key; an unknown key in a [tools.NAME]
// table suggests the nearest.
func TestToolsTablesDeclareFallbacksWithArgumentMappingsCheckedAtTheirKey(t *testing.T) {
	body := goodManifest + "\n[tools.web_search]\nfallback = [\"grep\", { tool = \"local\", arguments = { q = \"query\", n = \"limit\" } }]\n"
	m, err := Load(writeManifest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	fb := m.Tools["web_search"].Fallback
	if len(fb) != 2 || fb[0].Tool != "grep" || fb[0].Arguments != nil || fb[1].Tool != "local" ||
		len(fb[1].Arguments) != 2 || fb[1].Arguments["q"] != "query" || fb[1].Arguments["n"] != "limit" {
		t.Fatalf("fallback %+v", fb)
	}
	for table, want := range map[string]string{
		"[tools.x]\nfallbak = [\"y\"]":                                       `tools.x.fallbak: unknown key (did you mean "fallback"?)`,
		"[tools.x]\nfallback = \"y\"":                                        `want a list of tool names`,
		"[tools.x]\nfallback = [3]":                                          `want a tool's name or { tool = "NAME", arguments = { ... } }`,
		"[tools.x]\nfallback = [{ tool = \"y\", when = \"always\" }]":        `a fallback table has tool and arguments, not "when"`,
		"[tools.x]\nfallback = [{ tool = \"y\", arguments = [\"q\"] }]":      `a fallback's arguments map its argument names to the failed call's`,
		"[tools.x]\nfallback = [{ arguments = { q = \"q\" } }]":              `tools.x.fallback: a fallback needs a tool's name`,
		"[tools.x]\nfallback = [\"y\", { tool = \"y\", arguments = {} }]":    `tools.x.fallback: fallback "y" is listed twice`,
		"[tools.x]\nfallback = [{ tool = \"y\", arguments = { q = \"\" } }]": `want the name of one of the failed call's arguments`,
	} {
		_, err := Load(writeManifest(t, goodManifest+"\n"+table+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || !regexp.MustCompile(`agent\.toml:\d+: `).MatchString(err.Error()) {
			t.Errorf("%s:\n got %v\nwant %q at a line", table, err, want)
		}
	}
}
