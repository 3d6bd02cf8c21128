package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

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

// loadWorkflowFiles adds the workflows of the workflow_files globs to m.Workflows.
func (m *Manifest) loadWorkflowFiles() error {
	m.workflowFiles = map[string]*workflowFile{}
	for i, pat := range m.WorkflowFiles {
		key := fmt.Sprintf("workflow_files.%d", i)
		matches, err := filepath.Glob(m.Resolve(pat))
		if err != nil {
			return m.ErrorAt(key, "bad pattern %q: %v", pat, err)
		}
		if len(matches) == 0 {
			return m.ErrorAt(key, "%q matches no file", pat)
		}
		slices.Sort(matches)
		for _, path := range matches {
			name, def, src, err := readWorkflowFile(path)
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

func readWorkflowFile(path string) (string, workflow.Definition, *workflowFile, error) {
	src := &workflowFile{path: path, line: func(string) int { return 0 }}
	fail := func(line int, key, format string, args ...any) (string, workflow.Definition, *workflowFile, error) {
		return "", workflow.Definition{}, src, &Error{File: path, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(0, "(file)", "%v", err)
	}
	defer f.Close()
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
				return fail(pe.Position.Line, "(syntax)", "%s", pe.Message)
			}
			return fail(0, "(syntax)", "%s", strings.TrimPrefix(err.Error(), "toml: "))
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
		return fail(src.line("name"), "name", "workflow name %q must be letters, digits, _ and - (it names a URL and a tool)", name)
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
		return te.Errors[0]
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
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
