package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers/openai"
)

// With no key for the hosted API, Configure refuses before any call, naming the variable;
// a base_url (a local server that may need no key) or a key lets it through.
func TestConfigureWithoutKeyForTheHostedAPINamesTheVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	p := openai.New() // the environment alone has no key: New still works
	err := p.Configure(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
		t.Fatalf("no key: err %v", err)
	}
	for _, opts := range []map[string]string{{"base_url": "http://127.0.0.1:1/v1"}, {"api_key": "k"}} {
		if err := p.Configure(context.Background(), opts); err != nil {
			t.Errorf("%v: %v", opts, err)
		}
	}
	t.Setenv("OPENAI_API_KEY", "k")
	if err := p.Configure(context.Background(), nil); err != nil {
		t.Errorf("key in the environment: %v", err)
	}
}
