package seal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/store/seal"
)

func ring(t *testing.T, lines ...string) *seal.Keys {
	t.Helper()
	k, err := seal.Parse(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealedValuesOpenOnlyInTheirRowWithTheirKey(t *testing.T) {
	k1, _ := seal.NewKey()
	k2, _ := seal.NewKey()
	old, both := ring(t, k1), ring(t, k2, k1)
	sealed := old.Seal([]byte(`{"text":"the secret"}`), []byte("row1"))
	if strings.Contains(string(sealed), "secret") || !strings.HasPrefix(string(sealed), `"ahe1:`+old.Current()+":") || !strings.HasSuffix(string(sealed), `"`) {
		t.Fatalf("sealed = %s", sealed)
	}
	if again := old.Seal([]byte(`{"text":"the secret"}`), []byte("row1")); string(again) == string(sealed) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if got, err := both.Open(sealed, []byte("row1")); err != nil || string(got) != `{"text":"the secret"}` {
		t.Fatalf("a ring holding the old key: %q %v", got, err)
	}
	if _, err := both.Open(sealed, []byte("row2")); err == nil || !strings.Contains(err.Error(), "moved from another row") {
		t.Fatalf("opened in another row: %v", err)
	}
	if _, err := ring(t, k2).Open(sealed, []byte("row1")); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("a ring without the key: %v", err)
	}
	var none *seal.Keys
	if _, err := none.Open(sealed, []byte("row1")); !errors.Is(err, seal.ErrLocked) {
		t.Fatalf("no ring: %v", err)
	}
	if got, err := none.Open([]byte(`{"plain":1}`), nil); err != nil || string(got) != `{"plain":1}` {
		t.Fatalf("a plain value without a ring: %q %v", got, err)
	}
	if _, err := old.Strict().Open([]byte(`{"plain":1}`), nil); !errors.Is(err, seal.ErrNotSealed) {
		t.Fatalf("a strict ring opened a plain value: %v", err)
	}
	if got := none.Seal([]byte("x"), nil); string(got) != "x" {
		t.Fatalf("a nil ring sealed: %q", got)
	}
	// Hostile stored values: truncated, corrupt, flipped.
	for _, bad := range []string{string(sealed[:len(sealed)-1]), `"ahe1:` + old.Current() + `:!!!!"`, `"ahe1:` + old.Current() + `:"`,
		string(sealed[:len(sealed)-6]) + string(sealed[len(sealed)-6]^1) + string(sealed[len(sealed)-5:])} {
		if _, err := old.Open([]byte(bad), []byte("row1")); err == nil {
			t.Errorf("opened %q", bad)
		}
	}
}

func TestRingFormatErrors(t *testing.T) {
	k, _ := seal.NewKey()
	id, b64, _ := strings.Cut(k, ":")
	for text, want := range map[string]string{
		"":                                  "no key",
		"# only a comment\n":                "no key",
		"nocolon":                           "want ID:BASE64KEY",
		"bad id!:" + b64:                    "letters, digits",
		id + ":not base64":                  "not base64",
		id + ":c2hvcnQ=":                    "want 32 (AES-256)",
		k + "\n" + k:                        "listed twice",
		strings.Repeat("a", 33) + ":" + b64: "1 to 32",
	} {
		if _, err := seal.Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
	if r, err := seal.Parse(" # ring\n" + k + " ,\n"); err != nil || r.Current() != id {
		t.Fatalf("a ring with comments and separators: %v %v", r, err)
	}
}

// The blind index: the same word hashes the same under one key, differently under
// another, and a query covers every key of the ring.
func TestBlindIndexTerms(t *testing.T) {
	k1, _ := seal.NewKey()
	k2, _ := seal.NewKey()
	a, b := ring(t, k1), ring(t, k2, k1)
	idx := a.IndexText([]string{"paris", "paris", "rome"})
	words := strings.Fields(idx)
	if len(words) != 3 || words[0] != words[1] || words[0] == words[2] || strings.Contains(idx, "paris") {
		t.Fatalf("index %q", idx)
	}
	q := b.IndexQuery([]string{"paris"})
	if len(q) != 2 || q[1] != words[0] || q[0] == words[0] {
		t.Fatalf("query %q, index %q", q, idx)
	}
}

// The one rule every store opens by: a marked store needs keys; keys on an empty store
// mark it fully sealed (strict), on a store with data "mixed"; a marker agenthost did not
// write is an error, not a guess.
func TestModeDecidesFromTheMarker(t *testing.T) {
	k, _ := seal.NewKey()
	keys := ring(t, k)
	empty := func(v bool) func() (bool, error) { return func() (bool, error) { return v, nil } }
	if _, _, _, err := seal.Mode([]byte("all"), nil, empty(true)); !errors.Is(err, seal.ErrLocked) {
		t.Fatalf("marked, no keys: %v", err)
	}
	if use, _, w, err := seal.Mode(nil, nil, empty(true)); use != nil || w != "" || err != nil {
		t.Fatalf("unmarked, no keys: %v %q %v", use, w, err)
	}
	use, mixed, w, err := seal.Mode(nil, keys, empty(true))
	if err != nil || mixed || w != seal.MarkerAll {
		t.Fatalf("empty store given keys: mixed %v write %q %v", mixed, w, err)
	}
	if _, err := use.Open([]byte(`{}`), nil); !errors.Is(err, seal.ErrNotSealed) {
		t.Fatalf("a fully sealed store's ring is not strict: %v", err)
	}
	if _, mixed, w, _ := seal.Mode(nil, keys, empty(false)); !mixed || w != seal.MarkerMixed {
		t.Fatalf("store with data given keys: mixed %v write %q", mixed, w)
	}
	if _, mixed, w, _ := seal.Mode([]byte("mixed"), keys, nil); !mixed || w != "" {
		t.Fatalf("mixed marker: %v %q", mixed, w)
	}
	if _, _, _, err := seal.Mode([]byte("plain please"), keys, nil); err == nil {
		t.Fatal("an unknown marker was accepted")
	}
}
