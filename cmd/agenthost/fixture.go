package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/agenthost/agenthost/eval"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers/scripted"
)

// A replay fixture is a directory of three files (docs/eval.md, "Record and replay"):
// the eval cases, the scripted model's stories (one per case, chosen by the case's
// first user message) and the tools' recorded results.
const (
	fixtureCases = "cases.jsonl"
	fixtureModel = "model.json"
	fixtureTools = "tools.json"
)

// toolFile is tools.json: every recorded call, by its call id.
type toolFile struct {
	Calls []eval.ToolRecord `json:"calls"`
}

// fixture is a replay fixture being read or written.
type fixture struct {
	dir   string
	cases []eval.Case
	model scripted.Fixture
	tools toolFile
}

// openFixture reads the fixture in dir; a directory that does not exist or holds none
// of its files is a new, empty fixture. A directory with some of the files but not all
// is refused: it is not ours, or it was half written by hand.
func openFixture(dir string) (*fixture, error) {
	f := &fixture{dir: dir}
	present := 0
	for _, name := range []string{fixtureCases, fixtureModel, fixtureTools} {
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
		return nil, fmt.Errorf("%s holds some of %s, %s and %s but not all: not a replay fixture", dir, fixtureCases, fixtureModel, fixtureTools)
	}
	var err error
	if f.cases, err = eval.Load(filepath.Join(dir, fixtureCases)); err != nil {
		return nil, err
	}
	m, err := scripted.Load(filepath.Join(dir, fixtureModel))
	if err != nil {
		return nil, err
	}
	f.model = *m
	data, err := os.ReadFile(filepath.Join(dir, fixtureTools))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f.tools); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, fixtureTools), err)
	}
	return f, nil
}

// add puts a recorded run in the fixture: its case, its story and its tool results. A
// case id already there, or a first user message another story already answers, is
// refused: the scripted model could not tell the two apart. A tool call id another
// case already used (a scripted recording's "c1") is renamed in the story and the
// results alike.
func (f *fixture) add(rec *eval.Recording) error {
	for _, c := range f.cases {
		if c.ID == rec.Case.ID {
			return fmt.Errorf("%s already has a case %q (choose another with --id)", f.dir, c.ID)
		}
	}
	when := firstUser(rec.Case.Input)
	for i, st := range f.model.Stories {
		if st.When == when {
			return fmt.Errorf("%s already replays a run whose first user message is %q (story %d): the scripted model picks a story by it", f.dir, clipText(when, 80), i+1)
		}
	}
	used := map[string]bool{}
	for _, t := range f.tools.Calls {
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
		f.tools.Calls = append(f.tools.Calls, t)
	}
	f.cases = append(f.cases, rec.Case)
	f.model.Stories = append(f.model.Stories, storyOf(rec, when, renamed))
	// Longest first: a story whose when is part of a longer one's first message (a
	// prompt that starts another) is tried after it.
	sort.SliceStable(f.model.Stories, func(i, j int) bool { return len(f.model.Stories[i].When) > len(f.model.Stories[j].When) })
	return nil
}

// storyOf is the scripted model's story for a recorded run: each answer as it came,
// the first one expecting the recorded system message, each after tool calls expecting
// their results (so a replay whose prompt or tools differ fails at the turn that
// differs, saying what it expected).
func storyOf(rec *eval.Recording, when string, renamed map[string]string) scripted.Story {
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
func firstUser(in eval.Input) string {
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

// write writes the fixture's three files, each whole (a temporary file renamed into
// place), the cases last so a reader never finds a case without its story.
func (f *fixture) write() error {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	if f.model.Turns == nil {
		f.model.Turns = []scripted.Turn{} // the stories are the script: "turns": [], not null
	}
	model, err := json.MarshalIndent(f.model, "", "  ")
	if err != nil {
		return err
	}
	tools, err := json.MarshalIndent(f.tools, "", "  ")
	if err != nil {
		return err
	}
	var cases bytes.Buffer
	for _, c := range f.cases {
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		cases.Write(line)
		cases.WriteByte('\n')
	}
	for _, out := range []struct {
		name string
		data []byte
	}{{fixtureModel, append(model, '\n')}, {fixtureTools, append(tools, '\n')}, {fixtureCases, cases.Bytes()}} {
		if err := writeWhole(filepath.Join(f.dir, out.name), out.data); err != nil {
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
