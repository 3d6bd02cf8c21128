package manifest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The manifest is a leaf (doc.go): it imports the standard library, the TOML and YAML
// decoders and the few project packages whose types a manifest holds, never the host,
// the sandbox, the providers or the stores. A program that only reads agent.toml (a
// linter, an editor's completion) links no Wasm runtime, no gRPC and no database driver.
func TestManifestImportsOnlyTheStandardLibraryTOMLAndLeafPackages(t *testing.T) {
	const mod = "github.com/agenthost/agenthost/"
	direct := map[string]bool{
		"github.com/BurntSushi/toml": true,
		"go.yaml.in/yaml/v3":         true,
		mod + "confine":              true, // sandbox = {read, write, net}: confine.Spec
		mod + "ociplugin":            true, // oci:// plugins: pull and agent.lock
		mod + "oidc":                 true, // [auth.oidc]: oidc.Config and its check
		mod + "redact":               true, // [redact]: redact.Config and its check
		mod + "approval":             true, // [[approvals]]: the rules, compiled by the check
		mod + "workflow":             true, // [workflows.NAME]: Definition, Compile, Link
		mod + "schedule":             true, // [[schedules]]: the cron or interval grid and the missed policy
		"github.com/robfig/cron/v3":  true, // (through schedule)
	}
	// What those may bring with them from the project: access (oidc's roles) and loop
	// (the JSON Schema compiler of workflow inputs, redact's guardrail).
	indirect := []string{mod + "access", mod + "loop"}
	// Never, directly or not: what would make reading a manifest start a runtime. A
	// package here forbids its subpackages too, except host's (the leaves above).
	forbidden := []string{mod + "sandbox", mod + "providers", mod + "store", mod + "telemetry",
		mod + "memory", mod + "audit", mod + "mcpclient", mod + "surface/server", mod + "a2abridge",
		"github.com/tetratelabs/wazero", "github.com/extism", "github.com/sigstore", "github.com/jackc/pgx", "modernc.org/sqlite",
		"google.golang.org/grpc", "github.com/hashicorp/go-plugin", "github.com/a2aproject", "github.com/modelcontextprotocol",
		"go.opentelemetry.io"}

	imports := goList(t, "{{join .Imports \"\\n\"}}")
	for _, p := range imports {
		if !direct[p] && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			t.Errorf("manifest imports %s, outside its allowed set", p)
		}
	}
	for _, p := range goList(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", "-deps") {
		if p == mod+"host" || slices.ContainsFunc(forbidden, func(f string) bool { return p == f || strings.HasPrefix(p, f+"/") }) {
			t.Errorf("manifest depends on %s", p)
		}
		if strings.HasPrefix(p, mod) && p != mod+"manifest" && !direct[p] && !slices.Contains(indirect, p) {
			t.Errorf("manifest depends on the project's %s, outside its allowed set", p)
		}
	}
}

// goList runs go list on this package with a template, one result a line.
func goList(t *testing.T, format string, flags ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"list"}, flags...), "-f", format, ".")...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Fields(string(out))
}
