package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secret is what a file outside the project holds; no error may quote it.
const secret = "s3cr3t-TOKEN-7f9a"

// project writes agent.toml (top-level keys first, then wfBase and tables) in a fresh
// project directory beside an outside one holding secret files, and returns the
// manifest's path and the outside directory.
func project(t *testing.T, top, tables string) (string, string) {
	t.Helper()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(dir, "flows"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	for name, body := range map[string]string{
		"w.yaml": "root:" + secret + ":0:0\n",
		"w.json": `{"` + secret + `": [}`,
		"w.toml": "token = " + secret + "\n",
		"t.yaml": "steps: " + secret + "\n",
		"a.yaml": "steps: *" + secret + "\n",
		"f.toml": "[[steps]]\nid = 1.2." + secret + "\n",
	} {
		must(t, os.WriteFile(filepath.Join(outside, name), []byte(body), 0o600))
	}
	p := filepath.Join(dir, "agent.toml")
	must(t, os.WriteFile(p, []byte(top+wfBase+tables), 0o644))
	return p, outside
}

func wantRefused(t *testing.T, p, want string) {
	t.Helper()
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to contain %q", err, want)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error quotes the file: %v", err)
	}
}

func TestWorkflowFilesStayInsideTheManifestsDirectory(t *testing.T) {
	t.Run("dot-dot", func(t *testing.T) {
		p, _ := project(t, `workflow_files = ["../outside/*.yaml"]`+"\n", "")
		wantRefused(t, p, `agent.toml:1: workflow_files[0]: ../outside/*.yaml leaves the manifest's directory (paths in the manifest stay inside its directory; allow_outside_paths = true lets them out)`)
	})
	t.Run("dot-dot inside the pattern", func(t *testing.T) {
		p, _ := project(t, `workflow_files = ["flows/../../outside/w.yaml"]`+"\n", "")
		wantRefused(t, p, "leaves the manifest's directory")
	})
	t.Run("absolute", func(t *testing.T) {
		p, outside := project(t, "", "")
		body, _ := os.ReadFile(p)
		must(t, os.WriteFile(p, append([]byte(`workflow_files = ["`+outside+`/w.yaml"]`+"\n"), body...), 0o644))
		wantRefused(t, p, "workflow_files[0]: "+outside+"/w.yaml is absolute")
	})
	t.Run("file symlink out", func(t *testing.T) {
		p, outside := project(t, `workflow_files = ["flows/*"]`+"\n", "")
		must(t, os.Symlink(filepath.Join(outside, "w.yaml"), filepath.Join(filepath.Dir(p), "flows", "w.yaml")))
		wantRefused(t, p, "flows/w.yaml: (file): leaves the manifest's directory through a symbolic link")
	})
	t.Run("relative file symlink out", func(t *testing.T) {
		p, _ := project(t, `workflow_files = ["flows/*"]`+"\n", "")
		must(t, os.Symlink("../../outside/w.yaml", filepath.Join(filepath.Dir(p), "flows", "w.yaml")))
		wantRefused(t, p, "leaves the manifest's directory through a symbolic link")
	})
	t.Run("directory symlink out", func(t *testing.T) {
		p, outside := project(t, `workflow_files = ["linked/*"]`+"\n", "")
		must(t, os.Symlink(outside, filepath.Join(filepath.Dir(p), "linked")))
		wantRefused(t, p, `workflow_files[0]: "linked/*" matches no file`)
	})
}

func TestWorkflowFileSymlinkInsideTheDirectoryLoads(t *testing.T) {
	p, _ := project(t, `workflow_files = ["flows/*"]`+"\n", "")
	dir := filepath.Dir(p)
	must(t, os.MkdirAll(filepath.Join(dir, "shared"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "shared", "real.yaml"), []byte("steps: [{id: s, tool: calc}]\n"), 0o644))
	must(t, os.Symlink("../shared/real.yaml", filepath.Join(dir, "flows", "linked.yaml")))
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.WorkflowNames(), ","); got != "linked" {
		t.Fatalf("workflows %q", got)
	}
}

func TestAllowOutsidePathsLetsWorkflowFilesOut(t *testing.T) {
	p, outside := project(t, "", "")
	must(t, os.WriteFile(filepath.Join(outside, "ok.yaml"), []byte("steps: [{id: s, tool: calc}]\n"), 0o644))
	body, _ := os.ReadFile(p)
	must(t, os.WriteFile(p, append([]byte("allow_outside_paths = true\nworkflow_files = [\""+outside+"/ok.yaml\", \"../outside/ok.yaml\"]\n"), body...), 0o644))
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `workflow "ok" is also declared in`) {
		t.Fatalf("both patterns read the outside file: err = %v", err)
	}
}

// Errors from a workflow file that does not decode name the file, line and key, never
// what the file holds: read with allow_outside_paths from anywhere, each format.
func TestWorkflowFileErrorsQuoteNoBytesOfTheFile(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"w.yaml", "w.yaml:1: (workflow): line 1: cannot unmarshal !!str (value) into"},
		{"w.json", "w.json: (syntax): did not find expected node content"},
		{"w.toml", "w.toml:1: (syntax):"},
		{"t.yaml", "t.yaml:1: (workflow): line 1: cannot unmarshal !!str (value) into"},
		{"a.yaml", "a.yaml: (syntax): unknown anchor (value) referenced"},
		{"f.toml", "f.toml:2: (syntax):"},
	} {
		t.Run(c.file, func(t *testing.T) {
			p, _ := project(t, "allow_outside_paths = true\nworkflow_files = [\"../outside/"+c.file+"\"]\n", "")
			wantRefused(t, p, c.want)
		})
	}
	t.Run("bad name", func(t *testing.T) {
		p, outside := project(t, "allow_outside_paths = true\nworkflow_files = [\"../outside/n.yaml\"]\n", "")
		must(t, os.WriteFile(filepath.Join(outside, "n.yaml"), []byte("name: "+secret+"/x\nsteps: []\n"), 0o600))
		wantRefused(t, p, "n.yaml:1: name: a workflow name must be letters")
	})
}

func TestWorkflowFileThatIsAFIFOIsRefusedNotWaitedOn(t *testing.T) {
	p, _ := project(t, `workflow_files = ["flows/*"]`+"\n", "")
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(p), "flows", "f.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, p, "f.yaml: (file): not a regular file")
}

// The other confined keys refuse .., absolute paths and symbolic links out the same way,
// and allow_outside_paths lets each out.
func TestConfinedKeysStayInsideTheManifestsDirectory(t *testing.T) {
	cases := []struct{ name, tables, key string }{
		{"allowed_paths", "[[plugins]]\nname = \"p\"\nwasm = \"%s\"\n[plugins.permissions]\nallowed_paths = { \"ro:%s\" = \"/data\" }\n", "plugins[0].permissions.allowed_paths"},
		{"mcp cwd", "[[mcp_servers]]\nname = \"s\"\ncommand = [\"%s\"]\ncwd = \"%s\"\n", "mcp_servers[0].cwd"},
		{"mcp roots", "[[mcp_servers]]\nname = \"s\"\ncommand = [\"%s\"]\nroots = [\"flows\", \"%s\"]\n", "mcp_servers[0].roots[1]"},
		{"verify key", "[[plugins]]\nname = \"p\"\nwasm = \"oci://127.0.0.1:1/p:1\"\n# %s\nverify = { key = \"%s\" }\n", "plugins[0].verify.key"},
		{"jwks_file", "[auth.oidc]\nissuer = \"https://id.example\"\naudience = \"a\"\n# %s\njwks_file = \"%s\"\n", "auth.oidc.jwks_file"},
		{"trusted_root", "[[plugins]]\nname = \"p\"\nwasm = \"oci://127.0.0.1:1/p:1\"\n# %s\nverify = { identity = \"a@b\", issuer = \"https://i\", trusted_root = \"%s\" }\n", "plugins[0].verify.trusted_root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tables := func(p string) string {
				return strings.ReplaceAll(strings.Replace(c.tables, "%s", "x.wasm", 1), "%s", p)
			}
			for _, bad := range []struct{ path, want string }{
				{"../outside", "../outside leaves the manifest's directory"},
				{"data/../../outside", "leaves the manifest's directory"},
				{"OUTSIDE", "is absolute"},
				{"link", "link: leaves the manifest's directory through a symbolic link"},
			} {
				p, outside := project(t, "", "")
				dir := filepath.Dir(p)
				must(t, os.WriteFile(filepath.Join(dir, "x.wasm"), []byte("\x00asm"), 0o644))
				must(t, os.Symlink(outside, filepath.Join(dir, "link")))
				path := strings.Replace(bad.path, "OUTSIDE", outside, 1)
				must(t, os.WriteFile(p, []byte(wfBase+tables(path)), 0o644))
				_, err := Load(p)
				if err == nil || !strings.Contains(err.Error(), c.key+": ") || !strings.Contains(err.Error(), bad.want) {
					t.Fatalf("%s: err = %v\nwant %s: …%s", bad.path, err, c.key, bad.want)
				}
				// allow_outside_paths lets the same path through this check.
				must(t, os.WriteFile(p, []byte("allow_outside_paths = true\n"+wfBase+tables(path)), 0o644))
				if _, err := Load(p); err != nil && strings.Contains(err.Error(), "manifest's directory") {
					t.Fatalf("%s with allow_outside_paths: %v", bad.path, err)
				}
			}
		})
	}
}
