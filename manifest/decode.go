package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is a manifest problem at a file, line and key.
type Error struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
	Err  error // the cause, when the problem came from one (errors.Is sees through)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
}

// Load reads and checks a manifest. Every problem is a *Error naming the
// file, line and key: unknown keys, bad sizes and durations, missing files, digest
// mismatches, duplicate names and unknown providers. It records what its oci:// plugins
// resolved to in its lock file (LockUpdate).
func Load(path string) (*Manifest, error) {
	return LoadWith(path, LockUpdate)
}

// LoadWith is Load with what to do with the lock file (lock.go).
func LoadWith(path string, lock LockMode) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return decode(path, data, lock)
}

// Parse decodes and checks manifest text as if read from path (relative paths
// in it start from path's directory; the file need not exist). It is how a manifest
// made by a program, such as `plugins call` on a bare .wasm, is checked like a file.
// It neither reads nor writes a lock file.
func Parse(path string, data []byte) (*Manifest, error) {
	return decode(path, data, LockOff)
}

// decode decodes and checks the manifest text data read from path (relative
// paths in it are resolved from path's directory), treating its lock file as lock says.
func decode(path string, data []byte, lock LockMode) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m := &Manifest{Path: path, Dir: filepath.Dir(abs), lines: indexKeys(data)}
	md, err := toml.Decode(string(data), m)
	if err != nil {
		return nil, m.decodeError(data, err)
	}
	if und := undecoded(md); len(und) > 0 {
		k := und[0].String()
		if hint := suggestKey(k); hint != "" {
			return nil, m.errAt(m.lines.find(k), k, "unknown key (did you mean %q?)", hint)
		}
		return nil, m.errAt(m.lines.find(k), k, "unknown key")
	}
	m.markToolsOff(md)
	if err := m.openLock(lock); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := m.finishLock(); err != nil {
		return nil, err
	}
	m.lock = nil
	return m, nil
}

// typeErr matches the decoder's type errors, which are not ParseErrors.
var typeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// decodeError turns a decoder error into an *Error. The decoder keys positions
// without array indexes, so for a key repeated across [[tables]] it reports the last
// one's line; when the message quotes the offending value, the line holding it wins.
func (m *Manifest) decodeError(data []byte, err error) error {
	var pe toml.ParseError
	line, key, msg := 0, "(syntax)", err.Error()
	switch {
	case errors.As(err, &pe):
		// The byte offset, not the decoder's line count, which is one ahead when the
		// error is at a line's end (an unclosed [[table] header).
		line, msg = pe.Position.Line, pe.Message
		if s := pe.Position.Start; s > 0 && s <= len(data) {
			line = 1 + bytes.Count(data[:s], []byte("\n"))
		}
		if pe.LastKey != "" {
			key = pe.LastKey
		}
	case typeErr.MatchString(msg):
		sm := typeErr.FindStringSubmatch(msg)
		line, _ = strconv.Atoi(sm[1])
		key, msg = sm[2], sm[3]
	}
	if cands := m.lines.all(key); len(cands) > 1 {
		text := strings.Split(string(data), "\n")
		for _, q := range quoted(msg) {
			for _, c := range cands {
				if c-1 < len(text) && strings.Contains(text[c-1], q) {
					line = c
				}
			}
		}
	}
	return &Error{File: m.Path, Line: line, Key: key, Msg: strings.TrimPrefix(msg, "toml: ")}
}

// quoted returns the "..." strings in s, unquoted.
func quoted(s string) []string {
	var out []string
	for _, q := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(s, -1) {
		if u, err := strconv.Unquote(q); err == nil && u != "" {
			out = append(out, u)
		}
	}
	return out
}

func (m *Manifest) errAt(line int, key, format string, args ...any) error {
	e := &Error{File: m.Path, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
		}
	}
	return e
}

// ErrorAt reports a problem at an indexed key path such as "plugins.1.wasm": an *Error
// naming the manifest, the key's line and the key as users write it ("plugins[1].wasm").
func (m *Manifest) ErrorAt(path, format string, args ...any) error {
	return m.errAt(m.lines.line(path), displayKey(path), format, args...)
}
