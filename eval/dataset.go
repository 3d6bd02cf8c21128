package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Case is one evaluation case.
type Case struct {
	ID      string   `json:"id"`
	Input   Input    `json:"input"`
	Expect  Expect   `json:"expect"`
	Graders []Grader `json:"graders,omitempty"`
	// Line is where the case starts in its file (JSONL line; 0 for YAML).
	Line int `json:"-"`
}

// Input is what the case sends: a prompt, or messages (role user/assistant/system, text
// content) ending with the user's; the run's user and starting agent.
type Input struct {
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	User     string    `json:"user,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	// OutputSchema asks the run for a JSON answer matching it (rule L10).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Message is one input message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Expect is what the run must do. Every set field is checked; a case with none passes
// when its run completes (Status defaults to "completed").
type Expect struct {
	Contains    []string `json:"contains,omitempty"`     // each is part of the final text
	NotContains []string `json:"not_contains,omitempty"` // none is
	Matches     string   `json:"matches,omitempty"`      // a regular expression (RE2) the final text matches
	// Equals is the exact final text (a recorded run's: sessions export --fixture).
	Equals *string `json:"equals,omitempty"`
	// OutputSchema: the final answer is JSON matching it; OutputEquals: it equals this
	// JSON (compared as values: key order and spacing do not matter).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	OutputEquals json.RawMessage `json:"output_equals,omitempty"`
	// Tools are calls the run must make: by name, with arguments holding at least these
	// keys and values; with ToolsInOrder, in this order (other calls may come between).
	Tools        []ToolCall `json:"tools,omitempty"`
	ToolsInOrder bool       `json:"tools_in_order,omitempty"`
	NoTools      bool       `json:"no_tools,omitempty"` // the run calls no tool
	MaxCostUSD   float64    `json:"max_cost_usd,omitempty"`
	MaxSteps     int        `json:"max_steps,omitempty"` // model calls
	Status       string     `json:"status,omitempty"`    // default completed
	Reason       string     `json:"reason,omitempty"`
}

// ToolCall is an expected call (or, in an outcome, a call made). Result, when set, is
// the exact text of the call's result: a recorded run's, so a replay whose tool answers
// differently fails naming the call.
type ToolCall struct {
	Name   string         `json:"name"`
	Args   map[string]any `json:"args,omitempty"`
	Result *string        `json:"result,omitempty"`
}

// Grader grades a case's run beyond its expectations: a Wasm evaluator plugin's grade
// export (Plugin, with Config passed on), or a model judge (Rubric). MinScore is the
// score a pass needs besides the grader's own pass (0: the grader's pass alone).
type Grader struct {
	Plugin   string            `json:"plugin,omitempty"`
	Config   map[string]string `json:"config,omitempty"`
	Rubric   string            `json:"rubric,omitempty"`
	MinScore float64           `json:"min_score,omitempty"`
}

// MaxCaseBytes bounds one case (a JSONL line, or a YAML file's case): a dataset is read
// whole, and a line of a gigabyte is a mistake, not a case.
const MaxCaseBytes = 1 << 20

// Load reads a dataset: JSON Lines (one case per line; blank lines and lines starting
// with # are skipped) or, for .yaml/.yml files, a YAML list of cases. Errors name the
// file and the line (JSONL) or the case (YAML).
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w%s", err, didYouMean(path))
	} else if err != nil {
		return nil, err
	}
	var cases []Case
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		cases, err = loadYAML(data)
	default:
		cases, err = loadJSONL(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	seen := map[string]int{}
	for i := range cases {
		c := &cases[i]
		where := fmt.Sprintf("case %d", i+1)
		if c.Line > 0 {
			where = fmt.Sprintf("line %d", c.Line)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, where, err)
		}
		if prev, dup := seen[c.ID]; dup {
			return nil, fmt.Errorf("%s: %s: id %q is also case %d's", path, where, c.ID, prev)
		}
		seen[c.ID] = i + 1
	}
	return cases, nil
}

func loadJSONL(data []byte) ([]Case, error) {
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), MaxCaseBytes)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if !utf8.Valid(line) {
			return nil, fmt.Errorf("line %d: not valid UTF-8", n)
		}
		var c Case
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		c.Line = n
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", len(cases)+1, MaxCaseBytes)
		}
		return nil, err
	}
	return cases, nil
}

func loadYAML(data []byte) ([]Case, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	var cases []Case
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		return nil, err
	}
	return cases, nil
}

// check says what is wrong with a case before anything runs.
func (c *Case) check() error {
	switch {
	case c.ID == "":
		return errors.New("a case needs an id")
	case c.Input.Prompt == "" && len(c.Input.Messages) == 0:
		return fmt.Errorf("case %q: input needs a prompt or messages", c.ID)
	case c.Input.Prompt != "" && len(c.Input.Messages) > 0:
		return fmt.Errorf("case %q: input has a prompt and messages: give one", c.ID)
	case c.Expect.MaxCostUSD < 0 || c.Expect.MaxSteps < 0:
		return fmt.Errorf("case %q: max_cost_usd and max_steps must not be negative", c.ID)
	}
	if c.Expect.Matches != "" {
		if _, err := regexp.Compile(c.Expect.Matches); err != nil {
			return fmt.Errorf("case %q: matches: %w", c.ID, err)
		}
	}
	for i, m := range c.Input.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return fmt.Errorf("case %q: messages[%d]: role %q (user, assistant, system)", c.ID, i, m.Role)
		}
	}
	for i, g := range c.Graders {
		if (g.Plugin == "") == (g.Rubric == "") {
			return fmt.Errorf("case %q: graders[%d]: give a plugin or a rubric", c.ID, i)
		}
	}
	for _, raw := range []json.RawMessage{c.Expect.OutputEquals, c.Expect.OutputSchema, c.Input.OutputSchema} {
		if len(raw) > 0 && !json.Valid(raw) {
			return fmt.Errorf("case %q: a schema or expected output is not JSON", c.ID)
		}
	}
	return nil
}
