package jsbundle

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Module is the name a bundle imports the host's capabilities from; the
// runtime provides it, so it is never bundled.
const Module = "agenthost"

// Environment variables the runtime plugin reads its bundle from, at
// initialisation (before any host function may be called).
const (
	EnvBundle = "AGENTHOST_JS_BUNDLE" // the script, base64
	EnvFile   = "AGENTHOST_JS_FILE"   // its name in stack traces
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
// "agenthost". Errors name the file, line and column.
func Build(path string) (Bundle, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Bundle{}, err
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
	})
	if len(res.Errors) > 0 {
		return Bundle{}, errors.New(describe(res.Errors))
	}
	for _, f := range res.OutputFiles {
		if strings.HasSuffix(f.Path, ".js") {
			if len(f.Contents) > MaxBundle {
				return Bundle{}, fmt.Errorf("%s: the bundle is %d bytes, over the %d a tool may have", path, len(f.Contents), MaxBundle)
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

// Environ is the environment the runtime plugin loads b from.
func (b Bundle) Environ() map[string]string {
	return map[string]string{
		EnvBundle: base64.StdEncoding.EncodeToString(b.Code),
		EnvFile:   b.File,
	}
}
