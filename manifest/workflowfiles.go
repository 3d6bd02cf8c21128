package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/workflow"
)

// Workflow files (workflow_files = ["flows/*.yaml"], docs/workflows.md#files): one
// workflow per file, in YAML, JSON or TOML by extension, with the keys of a
// [workflows.NAME] table plus an optional name (default: the file's name without its
// extension). The key is workflow_files, not the issue's `workflows = [...]`: TOML
// cannot make one key both the [workflows.NAME] tables and a list.

// maxWorkflowFile bounds a workflow file: a definition is a page, not a data set.
const maxWorkflowFile = 1 << 20

// workflowFile is where a workflow came from when it is not the manifest itself: its
// errors name that file and a line in it.
type workflowFile struct {
	path string
	line func(key string) int // 0 when unknown
}

var workflowNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// loadWorkflowFiles adds the workflows of the workflow_files globs to m.Workflows. The
// globs and the files they match stay inside the manifest's directory (paths.go): they
// are matched and opened through an os.Root of it, unless allow_outside_paths is set.
func (m *Manifest) loadWorkflowFiles() error {
	m.workflowFiles = map[string]*workflowFile{}
	var root *os.Root
	if len(m.WorkflowFiles) > 0 && !m.AllowOutsidePaths {
		r, err := os.OpenRoot(m.Dir)
		if err != nil {
			return m.ErrorAt("workflow_files", "cannot open the manifest's directory: %v", errors.Unwrap(err))
		}
		defer r.Close()
		root = r
	}
	for i, pat := range m.WorkflowFiles {
		key := fmt.Sprintf("workflow_files.%d", i)
		matches, err := m.globWorkflows(root, key, pat)
		if err != nil {
			return err
		}
		for _, path := range matches {
			name, def, src, err := readWorkflowFile(path, m.opener(root, path))
			if err != nil {
				return err
			}
			if _, dup := m.Workflows[name]; dup {
				where := m.Path
				if other := m.workflowFiles[name]; other != nil {
					where = other.path
				}
				return &Error{File: path, Line: src.line("name"), Key: "name", Msg: fmt.Sprintf("workflow %q is also declared in %s", name, where)}
			}
			if m.Workflows == nil {
				m.Workflows = map[string]workflow.Definition{}
			}
			m.Workflows[name], m.workflowFiles[name] = def, src
		}
	}
	return nil
}

// globWorkflows lists the files pat matches, sorted: in root when there is one (a
// directory that leaves it through a symbolic link is not entered).
func (m *Manifest) globWorkflows(root *os.Root, key, pat string) ([]string, error) {
	var matches []string
	if root == nil {
		var err error
		if matches, err = filepath.Glob(m.Resolve(pat)); err != nil {
			return nil, m.ErrorAt(key, "bad pattern %q: %v", pat, err)
		}
	} else {
		rel, err := m.localPath(key, pat)
		if err != nil {
			return nil, err
		}
		found, err := fs.Glob(root.FS(), filepath.ToSlash(rel))
		if err != nil {
			return nil, m.ErrorAt(key, "bad pattern %q: %v", pat, err)
		}
		for _, f := range found {
			matches = append(matches, filepath.Join(m.Dir, filepath.FromSlash(f)))
		}
	}
	if len(matches) == 0 {
		return nil, m.ErrorAt(key, "%q matches no file", pat)
	}
	slices.Sort(matches)
	return matches, nil
}

// opener opens the workflow file at path without waiting (a FIFO is refused, not read):
// through root when there is one, which refuses a symbolic link out of it.
func (m *Manifest) opener(root *os.Root, path string) func() (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	if root == nil {
		return func() (*os.File, error) { return os.OpenFile(path, flags, 0) }
	}
	return func() (*os.File, error) {
		rel, err := filepath.Rel(m.Dir, path)
		if err != nil {
			return nil, err
		}
		f, err := root.OpenFile(rel, flags, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New(errOutside(err))
		}
		return f, err
	}
}

// WorkflowErrorAt reports a problem at key (relative: "steps.1.tool") of workflow name, in
// the file that declares it.
func (m *Manifest) WorkflowErrorAt(name, key, format string, args ...any) error {
	if src := m.workflowFiles[name]; src != nil {
		k := key
		if k == "" {
			k = "(workflow)"
		}
		return &Error{File: src.path, Line: src.line(key), Key: displayKey(k), Msg: fmt.Sprintf(format, args...)}
	}
	path := "workflows." + name
	if key != "" {
		path += "." + key
	}
	return m.ErrorAt(path, format, args...)
}

type fileDefinition struct {
	Name                string `toml:"name" yaml:"name"`
	workflow.Definition `yaml:",inline"`
}

// readWorkflowFile reads and decodes one workflow file. Its errors say where (line and
// key) and what, never a value read from it (withoutValues).
func readWorkflowFile(path string, open func() (*os.File, error)) (string, workflow.Definition, *workflowFile, error) {
	src := &workflowFile{path: path, line: func(string) int { return 0 }}
	fail := func(line int, key, format string, args ...any) (string, workflow.Definition, *workflowFile, error) {
		return "", workflow.Definition{}, src, &Error{File: path, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	f, err := open()
	if err != nil {
		return fail(0, "(file)", "%v", pathErr(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return fail(0, "(file)", "%v", err)
	} else if !fi.Mode().IsRegular() {
		return fail(0, "(file)", "not a regular file (mode %s)", fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxWorkflowFile+1))
	if err != nil {
		return fail(0, "(file)", "%v", err)
	}
	if len(data) > maxWorkflowFile {
		return fail(0, "(file)", "larger than %d bytes", maxWorkflowFile)
	}
	var fd fileDefinition
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".toml":
		lines := indexKeys(data)
		src.line = lines.line
		md, err := toml.Decode(string(data), &fd)
		if err != nil {
			var pe toml.ParseError
			if errors.As(err, &pe) {
				return fail(pe.Position.Line, "(syntax)", "%s", withoutValues(pe.Message))
			}
			return fail(0, "(syntax)", "%s", withoutValues(strings.TrimPrefix(err.Error(), "toml: ")))
		}
		if und := md.Undecoded(); len(und) > 0 {
			k := und[0].String()
			return fail(lines.find(k), k, "unknown key")
		}
	case ".yaml", ".yml", ".json":
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return fail(yamlErrLine(err), "(syntax)", "%s", yamlErrMsg(err))
		}
		src.line = func(key string) int { return yamlLine(&root, key) }
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&fd); err != nil && !errors.Is(err, io.EOF) {
			return fail(yamlErrLine(err), "(workflow)", "%s", yamlErrMsg(err))
		}
	default:
		return fail(0, "(file)", "a workflow file is .yaml, .yml, .json or .toml, not %q", ext)
	}
	name := fd.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if !workflowNameRE.MatchString(name) {
		return fail(src.line("name"), "name", "a workflow name must be letters, digits, _ and - (it names a URL and a tool)")
	}
	return name, fd.Definition, src, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func yamlErrMsg(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return withoutValues(te.Errors[0])
	}
	return withoutValues(strings.TrimPrefix(err.Error(), "yaml: "))
}

// yamlLine finds the line of a dotted key ("steps.1.if") in a parsed YAML document, or
// of its nearest ancestor.
func yamlLine(root *yaml.Node, key string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(key, ".") {
		next, at := yamlChild(n, part)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return line
}

// yamlChild is the node under part (a mapping key or a sequence index) and the line
// that names it.
func yamlChild(n *yaml.Node, part string) (*yaml.Node, int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
	}
	return nil, 0
}
