package openai

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
)

// OpenAI's own API refuses metadata without store, so a run's --meta is left out there
// unless store = "true"; any other server gets it; a bad store value is refused.
func TestMetadataIsLeftOutForOpenAIsAPIWithoutStore(t *testing.T) {
	extra := map[string]string{"team": "ai"}
	for _, tc := range []struct {
		store, baseURL, want string
	}{
		{"", "", `{}`},
		{"", "https://api.openai.com/v1", `{}`},
		{"false", "https://api.openai.com/v1", `{}`},
		{"true", "", `{"metadata":{"team":"ai"},"store":true}`},
		{"", "http://localhost:11434/v1", `{"metadata":{"team":"ai"}}`},
		{"true", "http://localhost:11434/v1", `{"metadata":{"team":"ai"},"store":true}`},
	} {
		m, err := newMetaPolicy(tc.store, tc.baseURL)
		if err != nil {
			t.Fatal(err)
		}
		var p sdk.ChatCompletionNewParams
		m.apply(&p, extra)
		b, _ := json.Marshal(p)
		var got map[string]json.RawMessage
		json.Unmarshal(b, &got)
		only := map[string]json.RawMessage{}
		for _, k := range []string{"metadata", "store"} {
			if v, ok := got[k]; ok {
				only[k] = v
			}
		}
		o, _ := json.Marshal(only)
		if string(o) != tc.want {
			t.Errorf("store=%q base_url=%q: %s, want %s", tc.store, tc.baseURL, o, tc.want)
		}
	}
	if _, err := newMetaPolicy("yes", ""); err == nil || !strings.Contains(err.Error(), `store "yes": want true or false`) {
		t.Fatalf("store=yes: %v", err)
	}
}
