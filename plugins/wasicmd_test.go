package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

// The C, Rust, AssemblyScript and WAT examples are WASI commands (the wasi
// ABI, no SDK): arguments JSON on stdin, text on stdout, exit ≠ 0 an error.

var textSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)

func loadCommand(t *testing.T, example, tool string) *sandbox.Plugin {
	t.Helper()
	p := loadExample(t, example, sandbox.Config{
		Tools: []sandbox.ToolDecl{{Name: tool, InputSchema: textSchema}},
		Args:  []string{tool},
	})
	if p.ABI() != sandbox.ABIWASI {
		t.Fatalf("%s: ABI() = %q, want wasi", example, p.ABI())
	}
	return p
}

func TestCWordCount(t *testing.T) {
	p := loadCommand(t, "c/wc", "word_count")
	wantTool(t, p, "word_count", `{"text":"one two  three\nfour\n"}`, false, "4 words, 2 lines, 20 characters")
	wantTool(t, p, "word_count", `{"text":"h\u00e9llo \"w\u00f6rld\""}`, false, "2 words, 1 lines, 13 characters")
	wantTool(t, p, "word_count", `{"text":""}`, false, "0 words, 0 lines, 0 characters")
	wantTool(t, p, "word_count", `{}`, true, "exited with code 2: wc: missing \"text\" string argument")
}

func TestRustSHA256(t *testing.T) {
	p := loadCommand(t, "rust/sha256", "sha256")
	for _, text := range []string{"", "abc", "héllo 😀 \"quoted\"\n", string(make([]byte, 1000))} {
		sum := sha256.Sum256([]byte(text))
		wantTool(t, p, "sha256", `{"text":`+quote(text)+`}`, false, hex.EncodeToString(sum[:]))
	}
	// A surrogate pair written as escapes decodes to the same bytes.
	sum := sha256.Sum256([]byte("😀"))
	wantTool(t, p, "sha256", `{"text":"\ud83d\ude00"}`, false, hex.EncodeToString(sum[:]))
	wantTool(t, p, "sha256", `{"other":1}`, true, "exited with code 2: sha256: missing \"text\" string argument")
}

func TestAssemblyScriptSlugify(t *testing.T) {
	p := loadCommand(t, "assemblyscript/slugify", "slugify")
	wantTool(t, p, "slugify", `{"text":"Hello, World! 2024"}`, false, "hello-world-2024")
	wantTool(t, p, "slugify", `{"text":"  --Already-Slugged--  "}`, false, "already-slugged")
	wantTool(t, p, "slugify", `{"text":"Caf\u00e9 \"Menu\"\nItems"}`, false, "caf-menu-items")
	wantTool(t, p, "slugify", `{"text":"!!!"}`, false, "")
	wantTool(t, p, "slugify", `{"name":"x"}`, true, "exited with code 2: slugify: missing \"text\" string argument")
}

func TestWATCountVowels(t *testing.T) {
	p := loadCommand(t, "wat/count_vowels", "count_vowels")
	wantTool(t, p, "count_vowels", `{"text":"Hello, World"}`, false, "3")
	wantTool(t, p, "count_vowels", `{"text":"AEIOU aeiou xyz"}`, false, "10")
	wantTool(t, p, "count_vowels", `{"text":""}`, false, "0")
	long := make([]byte, 20000)
	for i := range long {
		long[i] = 'a'
	}
	wantTool(t, p, "count_vowels", `{"text":"`+string(long)+`"}`, false, "20000")
	wantTool(t, p, "count_vowels", `[]`, true, "exited with code 2: count_vowels: input is not a JSON object")
}
