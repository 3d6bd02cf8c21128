package jsbundle

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// Header opens every bundle's first line, followed by the entry's quoted base
// name: `// agenthost bundle v1 "weather.ts"`. esbuild writes it as a banner,
// so the source map counts it. A file that starts with it is a built bundle
// (`agenthost plugins build`), which Build takes as it is rather than
// bundling it again: what runs is byte for byte what was built, signed or
// pushed.
const Header = "// agenthost bundle v1 "

// banner is the first line of entry's bundle.
func banner(entry string) string { return Header + strconv.Quote(filepath.Base(entry)) }

// readBuilt returns the bundle at path if the file is a built one (it starts
// with Header), ok false if it is a source to bundle.
func readBuilt(path string) (b Bundle, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return Bundle{}, false, nil // esbuild says what is wrong with the entry
	}
	defer f.Close()
	head := make([]byte, len(Header))
	if n, _ := io.ReadFull(f, head); n < len(Header) || string(head) != Header {
		return Bundle{}, false, nil
	}
	code, err := io.ReadAll(io.LimitReader(f, MaxBundle))
	if err != nil {
		return Bundle{}, true, err
	}
	code = append(head, code...)
	if len(code) > MaxBundle {
		return Bundle{}, true, fmt.Errorf("%s: the bundle is over the %d bytes a tool may have", path, MaxBundle)
	}
	if !utf8.Valid(code) {
		return Bundle{}, true, fmt.Errorf("%s: the bundle is not UTF-8", path)
	}
	first, _, _ := bytes.Cut(code[len(Header):], []byte("\n"))
	name, err := strconv.Unquote(string(bytes.TrimRight(first, "\r")))
	if err != nil || name == "" || filepath.Base(name) != name {
		return Bundle{}, true, fmt.Errorf("%s: the bundle's first line names no source file: %q", path, first)
	}
	return Bundle{File: name, Code: code}, true, nil
}
