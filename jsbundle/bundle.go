package jsbundle

import (
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// Module is the name a bundle imports the host's capabilities from; the
// runtime provides it, so it is never bundled.
const Module = "agenthost"

// Config keys the runtime plugin reads its bundle from, at an instance's
// first call. They are the host's: a manifest's own config may not use them.
const (
	ConfigBundle = "agenthost.js.bundle" // the script
	ConfigFile   = "agenthost.js.file"   // its name in stack traces
)

// MaxBundle bounds a bundle (before base64): a tool's code, not a data set.
const MaxBundle = 8 << 20

// Bundle is one built script.
type Bundle struct {
	File string // the entry's base name, e.g. "weather.ts"
	Code []byte // CommonJS, ES2017, with an inline source map
}

// Build bundles the entry file at path (.js, .mjs, .cjs, .ts, .mts, .cts,
// .tsx, .jsx) with every relative or node_modules import it makes, except
// "agenthost". Errors name the file, line and column. A file that is
// already a bundle (it starts with Header) is taken as it is.
func Build(path string) (Bundle, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Bundle{}, err
	}
	if b, ok, err := readBuilt(abs); ok || err != nil {
		return b, err
	}
	dir := filepath.Dir(abs)
	res := api.Build(api.BuildOptions{
		EntryPoints:    []string{abs},
		AbsWorkingDir:  dir,
		Outfile:        filepath.Join(dir, "bundle.js"), // not written: names the map's sources relative to dir
		Bundle:         true,
		Write:          false,
		Format:         api.FormatCommonJS,
		Platform:       api.PlatformNeutral,
		MainFields:     []string{"module", "main"},
		Target:         api.ES2017,
		External:       []string{Module},
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
		Banner:         map[string]string{"js": banner(abs)},
	})
	if len(res.Errors) > 0 {
		return Bundle{}, errors.New(describe(res.Errors))
	}
	for _, f := range res.OutputFiles {
		if strings.HasSuffix(f.Path, ".js") {
			if len(f.Contents) > MaxBundle {
				return Bundle{}, fmt.Errorf("%s: the bundle is %d bytes, over the %d a tool may have", path, len(f.Contents), MaxBundle)
			}
			if !utf8.Valid(f.Contents) {
				return Bundle{}, fmt.Errorf("%s: the bundle is not UTF-8", path)
			}
			return Bundle{File: filepath.Base(abs), Code: f.Contents}, nil
		}
	}
	return Bundle{}, fmt.Errorf("%s: esbuild wrote no script", path)
}

// describe words esbuild's errors as file:line:col: text, one a line.
func describe(msgs []api.Message) string {
	lines := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if l := m.Location; l != nil {
			lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", l.File, l.Line, l.Column+1, m.Text))
		} else {
			lines = append(lines, m.Text)
		}
	}
	return strings.Join(lines, "\n")
}

// Config is the plugin config the runtime plugin loads b from: config, the
// manifest's own, with the bundle's keys added. A manifest that sets one of
// them is refused rather than overridden.
func (b Bundle) Config(config map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(config)+2)
	for k, v := range config {
		if k == ConfigBundle || k == ConfigFile {
			return nil, fmt.Errorf("config key %q is the host's, for a JavaScript plugin's bundle", k)
		}
		out[k] = v
	}
	out[ConfigBundle], out[ConfigFile] = string(b.Code), b.File
	return out, nil
}

// Types is agenthost.d.ts: the "agenthost" module's TypeScript declarations, which
// `agenthost plugins new ts` writes beside a new tool for editors and type checkers.
//
//go:embed agenthost.d.ts
var Types string
