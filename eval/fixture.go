package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers/scripted"
)

// A replay fixture is a directory of three files (docs/eval.md, "Record and replay"):
// the eval cases, the scripted model's stories (one per case, chosen by the case's
// first user message) and the tools' recorded results.
const (
	FixtureCases = "cases.jsonl"
	FixtureModel = "model.json"
	FixtureTools = "tools.json"
)

// ToolFile is tools.json: every recorded call, by its call id.
type ToolFile struct {
	Calls []ToolRecord `json:"calls"`
}

// Fixture is a replay fixture being read or written: its directory (empty for one
// built in memory, Files), its cases, the scripted model's stories and the tools'
// recorded results.
type Fixture struct {
	Dir   string
	Cases []Case
	Model scripted.Fixture
	Tools ToolFile
}

// OpenFixture reads the fixture in dir; a directory that does not exist or holds none
// of its files is a new, empty fixture. A directory with some of the files but not all
// is refused: it is not ours, or it was half written by hand.
func OpenFixture(dir string) (*Fixture, error) {
	f := &Fixture{Dir: dir}
	present := 0
	for _, name := range []string{FixtureCases, FixtureModel, FixtureTools} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			present++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	switch present {
	case 0:
		return f, nil
	case 3:
	default:
		return nil, fmt.Errorf("%s holds some of %s, %s and %s but not all: not a replay fixture", dir, FixtureCases, FixtureModel, FixtureTools)
	}
	var err error
	if f.Cases, err = Load(filepath.Join(dir, FixtureCases)); err != nil {
		return nil, err
	}
	m, err := scripted.Load(filepath.Join(dir, FixtureModel))
	if err != nil {
		return nil, err
	}
	f.Model = *m
	data, err := os.ReadFile(filepath.Join(dir, FixtureTools))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f.Tools); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FixtureTools), err)
	}
	return f, nil
}

// Add puts a recorded run in the fixture: its case, its story and its tool results. A
// case id already there, or a first user message another story already answers, is
// refused: the scripted model could not tell the two apart. A tool call id another
// case already used (a scripted recording's "c1") is renamed in the story and the
// results alike.
func (f *Fixture) Add(rec *Recording) error {
	for _, c := range f.Cases {
		if c.ID == rec.Case.ID {
			return fmt.Errorf("%s already has a case %q (choose another with --id)", f.Dir, c.ID)
		}
	}
	when := firstUser(rec.Case.Input)
	for i, st := range f.Model.Stories {
		if st.When == when {
			return fmt.Errorf("%s already replays a run whose first user message is %q (story %d): the scripted model picks a story by it", f.Dir, clipText(when, 80), i+1)
		}
	}
	used := map[string]bool{}
	for _, t := range f.Tools.Calls {
		used[t.ID] = true
	}
	renamed := map[string]string{}
	for _, t := range rec.Tools {
		id := t.ID
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("%s-%s-%d", t.ID, rec.Case.ID, n)
		}
		renamed[t.ID], used[id] = id, true
		t.ID = id
		f.Tools.Calls = append(f.Tools.Calls, t)
	}
	f.Cases = append(f.Cases, rec.Case)
	f.Model.Stories = append(f.Model.Stories, storyOf(rec, when, renamed))
	// Longest first: a story whose when is part of a longer one's first message (a
	// prompt that starts another) is tried after it.
	sort.SliceStable(f.Model.Stories, func(i, j int) bool { return len(f.Model.Stories[i].When) > len(f.Model.Stories[j].When) })
	return nil
}

// storyOf is the scripted model's story for a recorded run: each answer as it came,
// the first one expecting the recorded system message, each after tool calls expecting
// their results (so a replay whose prompt or tools differ fails at the turn that
// differs, saying what it expected).
func storyOf(rec *Recording, when string, renamed map[string]string) scripted.Story {
	st := scripted.Story{When: when}
	for i, t := range rec.Turns {
		turn := scripted.Turn{Text: t.Text, Reasoning: t.Reasoning}
		for _, c := range t.Calls {
			id := c.ID
			if r, ok := renamed[id]; ok {
				id = r
			}
			turn.ToolCalls = append(turn.ToolCalls, scripted.ToolCall{ID: id, Name: c.Name, Arguments: c.Arguments})
		}
		if u := t.Usage; u != nil {
			turn.Usage = &scripted.Usage{PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens)}
		}
		if t.Stop != "" && t.Stop != loop.StopEndTurn && t.Stop != loop.StopToolUse {
			turn.StopReason = string(t.Stop)
		}
		switch {
		case i == 0 && rec.System != "":
			turn.Expect = &scripted.Expect{SystemContains: rec.System}
		case i > 0 && len(rec.Turns[i-1].Calls) > 0:
			turn.Expect = &scripted.Expect{LastRole: "tool"}
		}
		st.Turns = append(st.Turns, turn)
	}
	return st
}

// firstUser is the first user message of a case's input: what the scripted model
// matches a story by.
func firstUser(in Input) string {
	if in.Prompt != "" {
		return in.Prompt
	}
	for _, m := range in.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// FixtureFile is one file of a fixture: its name in the fixture's directory and its
// bytes.
type FixtureFile struct {
	Name string
	Data []byte
}

// Files is the fixture's three files as Write writes them, in the order it writes them
// (the cases last): what a fixture handed out whole (the console's "save as test case")
// holds.
func (f *Fixture) Files() ([]FixtureFile, error) {
	if f.Model.Turns == nil {
		f.Model.Turns = []scripted.Turn{} // the stories are the script: "turns": [], not null
	}
	model, err := json.MarshalIndent(f.Model, "", "  ")
	if err != nil {
		return nil, err
	}
	tools, err := json.MarshalIndent(f.Tools, "", "  ")
	if err != nil {
		return nil, err
	}
	var cases bytes.Buffer
	for _, c := range f.Cases {
		line, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		cases.Write(line)
		cases.WriteByte('\n')
	}
	return []FixtureFile{{FixtureModel, append(model, '\n')}, {FixtureTools, append(tools, '\n')}, {FixtureCases, cases.Bytes()}}, nil
}

// Write writes the fixture's files into its directory, each whole (a temporary file
// renamed into place), the cases last so a reader never finds a case without its story.
func (f *Fixture) Write() error {
	files, err := f.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	for _, out := range files {
		if err := writeWhole(filepath.Join(f.Dir, out.Name), out.Data); err != nil {
			return err
		}
	}
	return nil
}

// writeWhole writes a file through a temporary file renamed into place.
func writeWhole(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fixture-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// clipText shortens s to n runes for a message.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
