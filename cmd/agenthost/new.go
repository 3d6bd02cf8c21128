package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/jsbundle"
	"github.com/agenthost/agenthost/plugins/sdk"
	"github.com/spf13/cobra"
)

// The templates of `plugins new`: one directory per language, files ending in .tmpl,
// "__NAME__" replaced by the plugin's name (in file names too), "__DIR__" by its
// directory relative to the manifest's (see snippetDir) and "__VERSION__" by agenthost's
// version.
//
//go:embed all:scaffold
var scaffold embed.FS

var scaffoldLangs = []string{"go", "c", "rust", "assemblyscript", "wat"}

// jsScaffoldLangs need no build: agenthost bundles the source when it loads it, and runs
// it in the JS runtime plugin (docs/javascript.md).
var jsScaffoldLangs = []string{"ts", "js"}

// pluginName is what a tool name may be for every provider (OpenAI's function names are
// [a-zA-Z0-9_-]{1,64}) and what every template can carry in source and file names.
var pluginName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`) })

func newNewCmd() *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "new go|c|rust|assemblyscript|wat|ts|js NAME",
		Short: "Write a tool plugin to start from, with its build script and manifest snippet",
		Long: `Write a tool plugin named NAME in a new directory (NAME, or --dir): its source, a
build.sh that builds NAME.wasm with the toolchains "make deps" installs, and
manifest.toml, the [[plugins]] entry that loads it. The plugin answers
"agenthost plugins call ./NAME/NAME.wasm NAME" as soon as it is built.

The Go plugin uses the agenthost SDK (mcp ABI: it describes its own tools); a copy of
the SDK is written under third_party/agenthost so it builds outside this repository.
C, Rust, AssemblyScript and WAT plugins are WASI commands (wasi ABI): arguments on
stdin, the result on stdout. A TypeScript or JavaScript tool (ts, js) needs no build:
its manifest entry names the source (js = "NAME/NAME.ts"), agenthost bundles it at load
and runs it in the JS runtime plugin; agenthost.d.ts types the "agenthost" module and
test.sh calls the tool.`,
		Example: `  agenthost plugins new go my_tool && (cd my_tool && ./build.sh)
  agenthost plugins call ./my_tool/my_tool.wasm my_tool '{}'
  agenthost plugins new rust word_count --dir plugins/word_count`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			lang, name := args[0], args[1]
			if all := append(slices.Clone(scaffoldLangs), jsScaffoldLangs...); !containsString(all, lang) {
				return usage(fmt.Errorf("no template for %q (want %s)", lang, strings.Join(all, ", ")))
			}
			if !pluginName().MatchString(name) {
				return usage(fmt.Errorf("plugin name %q: use lower-case letters, digits and _, starting with a letter (at most 48)", name))
			}
			if dir == "" {
				dir = name
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 && !force {
				return usage(fmt.Errorf("%s exists and is not empty; use --force to write into it", dir))
			}
			files, err := writeScaffold(lang, name, dir, manifestPath(cmd))
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote %s\n", strings.Join(files, ", "))
			if containsString(jsScaffoldLangs, lang) {
				fmt.Fprintf(out, "\ntry it (no build step):\n  agenthost plugins call %s %s '{\"text\":\"world\"}'\n  sh %s\n",
					filepath.Join(dir, name+"."+lang), name, filepath.Join(dir, "test.sh"))
			} else {
				fmt.Fprintf(out, "\nbuild and try it:\n  sh %s\n  agenthost plugins call %s %s '{\"text\":\"world\"}'\n",
					filepath.Join(dir, "build.sh"), filepath.Join(dir, name+".wasm"), name)
			}
			snippet, _ := os.ReadFile(filepath.Join(dir, "manifest.toml"))
			fmt.Fprintf(out, "\nthen add it to agent.toml (%s):\n%s", filepath.Join(dir, "manifest.toml"), snippet)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write (default NAME)")
	cmd.Flags().BoolVar(&force, "force", false, "write into a directory that is not empty")
	return cmd
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeScaffold writes the templates of lang, and for Go the SDK, and returns the files
// written, relative to dir. manifest is the manifest the snippet is meant for.
func writeScaffold(lang, name, dir, manifest string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rel, err := snippetDir(dir, manifest)
	if err != nil {
		return nil, err
	}
	subst := strings.NewReplacer("__NAME__", name, "__DIR__", rel, "__VERSION__", versionString(),
		"__PREFIXLEN__", strconv.Itoa(len(name+" got: ")))
	root := path.Join("scaffold", lang)
	entries, err := scaffold.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		body, err := scaffold.ReadFile(path.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		out := subst.Replace(strings.TrimSuffix(e.Name(), ".tmpl"))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(out, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, out), []byte(subst.Replace(string(body))), mode); err != nil {
			return nil, err
		}
		files = append(files, out)
	}
	if containsString(jsScaffoldLangs, lang) {
		if err := os.WriteFile(filepath.Join(dir, "agenthost.d.ts"), []byte(jsbundle.Types), 0o644); err != nil {
			return nil, err
		}
		files = append(files, "agenthost.d.ts")
	}
	if lang == "go" {
		if err := writeSDK(filepath.Join(dir, "third_party", "agenthost")); err != nil {
			return nil, fmt.Errorf("write the SDK: %w", err)
		}
		files = append(files, "third_party/agenthost/")
	}
	return files, nil
}

// snippetDir is dir as the manifest snippet names it: relative to the directory of the
// manifest it is pasted into (relative wasm paths resolve from there), so the plugin and
// the manifest can be committed, cloned or moved together. Build scripts need no path at
// all: they cd to their own directory.
func snippetDir(dir, manifest string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absManifest, err := filepath.Abs(manifest)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(filepath.Dir(absManifest), absDir)
	if err != nil { // another volume: nothing relative names it
		return filepath.ToSlash(absDir), nil
	}
	rel = filepath.ToSlash(rel)
	if !strings.HasPrefix(rel, "../") && rel != ".." {
		rel = "./" + rel // reads as a path, not a name
	}
	return rel, nil
}

// writeSDK writes the SDK embedded in this binary as a module of its own path.
func writeSDK(dir string) error {
	gomod := "module github.com/agenthost/agenthost\n\ngo 1.26\n\nrequire github.com/extism/go-pdk v1.1.3\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	return fs.WalkDir(sdk.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "plugins", "sdk", filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := sdk.Source.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
