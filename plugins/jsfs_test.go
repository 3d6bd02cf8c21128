package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

const filesTS = `import { tool, fs } from "agenthost";

tool({ name: "read", handler: (a: { path: string }) => fs.readFile(a.path) });
tool({ name: "write", handler: (a: { path: string; text: string }) => { fs.writeFile(a.path, a.text); return "ok"; } });
tool({ name: "list", handler: (a: { path: string }) => fs.readdir(a.path).map((d) => d.name + (d.isDirectory ? "/" : "")).join(",") });
`

// fs in "agenthost" is the guest's own file calls over its WASI preopens: the
// sandbox decides what a path reaches, exactly as for a Go plugin.
func TestAJSToolReachesOnlyItsAllowedPaths(t *testing.T) {
	root := t.TempDir()
	data, ro, outside := filepath.Join(root, "data"), filepath.Join(root, "ro"), filepath.Join(root, "outside")
	for _, d := range []string{data, ro, outside, filepath.Join(data, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{
		filepath.Join(data, "hello.txt"): "hello from the host", filepath.Join(ro, "fixed.txt"): "fixed",
		filepath.Join(outside, "secret.txt"): "secret",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(data, "link")); err != nil {
		t.Fatal(err)
	}
	p := mustLoadJS(t, "files.ts", filesTS, sandbox.Config{Name: "files", Permissions: sandbox.Permissions{
		AllowedPaths: map[string]string{data: "/data", "ro:" + ro: "/ro"},
	}})
	wantTool(t, p, "read", `{"path":"/data/hello.txt"}`, false, "hello from the host")
	wantTool(t, p, "read", `{"path":"/ro/fixed.txt"}`, false, "fixed")
	wantTool(t, p, "write", `{"path":"/data/sub/new.txt","text":"written by js"}`, false, "ok")
	if b, err := os.ReadFile(filepath.Join(data, "sub", "new.txt")); err != nil || string(b) != "written by js" {
		t.Errorf("the host sees %q, %v", b, err)
	}
	wantTool(t, p, "list", `{"path":"/data"}`, false, "hello.txt,link,sub/")
	for _, c := range []struct{ tool, args, want string }{
		// Outside every mount: the guest finds no preopen, the host is never asked.
		{"read", `{"path":"` + filepath.Join(outside, "secret.txt") + `"}`, "secret.txt: Bad file number"},
		{"read", `{"path":"/data/../outside/secret.txt"}`, "fs.readFile: open /data/../outside/secret.txt: Bad file number"},
		{"read", `{"path":"/data/../../../../` + strings.TrimPrefix(filepath.Join(outside, "secret.txt"), "/") + `"}`, "secret.txt: Bad file number"},
		{"list", `{"path":"/"}`, "fs.readdir: open /: Bad file number"},
		{"write", `{"path":"/data/../outside/planted.txt","text":"x"}`, "fs.writeFile: open /data/../outside/planted.txt: Bad file number"},
		// Inside a mount: the sandbox's os.Root refuses the symlink out and the write.
		{"read", `{"path":"/data/link"}`, "fs.readFile: open /data/link: Operation not permitted"},
		{"write", `{"path":"/ro/fixed.txt","text":"changed"}`, "fs.writeFile: open /ro/fixed.txt: Read-only file system"},
	} {
		text := wantFailure(t, p, c.tool, c.args)
		if !strings.Contains(text, c.want) || !strings.Contains(text, `(plugin "files" reaches only its allowed_paths: `) {
			t.Errorf("%s(%s) = %q, want %q and the mounts' note", c.tool, c.args, text, c.want)
		}
		if strings.Contains(text, "secret") && !strings.Contains(text, "secret.txt") {
			t.Errorf("%s(%s) leaked the file: %q", c.tool, c.args, text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "fixed.txt")); string(b) != "fixed" {
		t.Errorf("the read-only mount's file is now %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); !os.IsNotExist(err) {
		t.Errorf("a file was planted outside the mounts: %v", err)
	}
	// Without allowed_paths, no path reaches a file.
	bare := mustLoadJS(t, "files.ts", filesTS, sandbox.Config{Name: "bare"})
	if text := wantFailure(t, bare, "read", `{"path":"/data/hello.txt"}`); !strings.Contains(text, `(plugin "bare" has no allowed_paths: it can reach no file)`) {
		t.Errorf("without allowed_paths: %q", text)
	}
}
