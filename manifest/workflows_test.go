package manifest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const wfBase = `[agent]
provider = "scripted"
[providers.scripted]
command = "bin/prov"
[store]
kind = "memory"
`

func TestManifestWorkflowErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"cycle", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
depends_on = ["b"]
[[workflows.p.steps]]
id = "b"
tool = "calc"
depends_on = ["a"]
`, "agent.toml:12: workflows.p.steps[0].depends_on: cycle: a → b → a"},
		{"unknown step", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
[[workflows.p.steps]]
id = "b"
tool = "calc"
depends_on = ["a", "zz"]
`, `agent.toml:15: workflows.p.steps[1].depends_on: unknown step "zz" (depends_on[1])`},
		{"condition does not compile", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
if = "inputs.n >"
`, `agent.toml:12: workflows.p.steps[0].if: expression "inputs.n >" does not compile`},
		{"argument reference to an unknown step", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
arguments = { expression = "${steps.nope.output}" }
`, `agent.toml:12: workflows.p.steps[0].arguments: expression: unknown step "nope"`},
		{"unknown agent", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
prompt = "hi"
agent = "ghost"
`, `agent.toml:12: workflows.p.steps[0].agent: unknown agent "ghost"`},
		{"unknown key", `
[workflows.p]
[[workflows.p.steps]]
id = "a"
tool = "calc"
retries = 2
`, `agent.toml:12: workflows.p.steps.retries: unknown key`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeManifest(t, wfBase+c.body))
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a ManifestError", err)
			}
			if got := filepath.Base(me.File) + strings.TrimPrefix(err.Error(), me.File); !strings.HasPrefix(got, c.want) {
				t.Fatalf("err = %q\nwant prefix %q", got, c.want)
			}
		})
	}
}
