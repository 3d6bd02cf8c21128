package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsRuntimeBeside builds the JS runtime plugin once per process and puts it beside the
// test's agenthost binary, where agenthost looks for it: `make plugins` does the same
// for bin/agenthost.
var jsRuntimeBeside = sync.OnceValue(func() error {
	cmd := exec.Command("bash", "scripts/plugins.d/jsruntime.sh")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return &buildError{out: string(out), err: err}
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "jsruntime", "jsruntime.wasm"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(binDir, "jsruntime.wasm"), b, 0o644)
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build the JS runtime: " + e.err.Error() + "\n" + e.out }

// `plugins new ts` and `js`: the scaffold needs no build, its test.sh passes at once
// (through `plugins call` of the source), and its snippet loads in a manifest whose
// `mcp serve` offers the tool to an MCP client.
func TestE2E_PluginsNewTSAndJSAnswerAtOnceAndServeOverMCP(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	e := &agentEnv{dir: work, manifest: filepath.Join(work, "agent.toml")}
	var snippets []string
	for _, lang := range jsScaffoldLangs {
		name := "my_" + lang
		r := e.agenthost(t, "plugins", "new", lang, name)
		if r.code != 0 || !strings.Contains(r.stdout, `js = "./`+name+"/"+name+"."+lang+`"`) || !strings.Contains(r.stdout, "agenthost.d.ts") {
			t.Fatalf("new %s: exit %d %s %s", lang, r.code, r.stdout, r.stderr)
		}
		test := exec.Command("sh", filepath.Join(work, name, "test.sh"))
		test.Env = append(os.Environ(), "AGENTHOST="+filepath.Join(binDir, "agenthost"))
		if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: ") || !strings.Contains(string(out), "Hello, world!") {
			t.Fatalf("%s test.sh: %v\n%s", lang, err, out)
		}
		snippet, err := os.ReadFile(filepath.Join(work, name, "manifest.toml"))
		if err != nil {
			t.Fatal(err)
		}
		snippets = append(snippets, string(snippet))
	}
	// A thrown error points at the TypeScript source's line.
	src := filepath.Join(work, "my_ts", "my_ts.ts")
	b, _ := os.ReadFile(src)
	os.WriteFile(src, []byte(strings.Replace(string(b), `    log.info(`, "    if (args.text === \"boom\") throw new Error(\"no boom\");\n    log.info(", 1)), 0o644)
	r := e.agenthost(t, "plugins", "call", src, "my_ts", `{"text":"boom"}`)
	if r.code != 1 || !strings.Contains(r.stdout, `my_ts: Error: no boom\n\tat handler (my_ts.ts:22:`) {
		t.Fatalf("boom: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	os.WriteFile(e.manifest, []byte("[store]\nkind = \"memory\"\n"+strings.Join(snippets, "\n")), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve")
	cmd.Dir = work
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if slices.Sort(names); strings.Join(names, ",") != "my_js,my_ts" {
		t.Fatalf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "my_js", Arguments: map[string]any{"text": "mcp"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Hello, mcp!" {
		t.Fatalf("my_js over mcp: %v %+v", err, res)
	}
	// The schema the source declares is the one the host checks.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "my_ts", Arguments: map[string]any{"text": 7}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/text: got number, want string") {
		t.Fatalf("my_ts schema refusal: %v %+v", err, res)
	}
}
