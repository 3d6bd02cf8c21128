package host

import (
	"encoding/json"
	"strings"
	"testing"
)

// PluginInfo shows a person what each plugin may touch, but never a config value: those
// are often secrets expanded from the environment, and the console shows this list.
func TestPluginInfoNamesConfigKeysButNotTheirValues(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_SECRET", "sk-do-not-show-me-1234567890")
	h := openHost(t, `{"turns": []}`, calcPlugin("calc")+`[plugins.permissions]
allowed_hosts = ["api.example.com"]
timeout = "3s"
config = { api_key = "${AGENTHOST_TEST_SECRET}", region = "eu" }
`, Options{})
	b, err := json.Marshal(h.PluginInfo())
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Contains(got, "sk-do-not-show-me") || strings.Contains(got, `"eu"`) {
		t.Fatalf("a config value leaked: %s", got)
	}
	want := `[{"name":"calc","kind":"tool","abi":"mcp","sandboxed":true,"tools":["calc"],"permissions":{"timeout":"3s","allowed_hosts":["api.example.com"]},"config_keys":["api_key","region"],"source":`
	if !strings.HasPrefix(got, want) {
		t.Fatalf("info:\n got %s\nwant %s…", got, want)
	}
}

// A manifest plugin is pre-initialised unless its entry says preinit = false: the Go
// calc example passes every check, so by default its instances start from a snapshot.
func TestPluginsArePreinitialisedByDefaultUnlessTheManifestSaysNo(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"", "snapshot"},
		{"preinit = true\n", "snapshot"},
		{"preinit = false\n", "pre-initialisation is off"},
	} {
		h := openHost(t, `{"turns": []}`, calcPlugin("calc")+c.extra, Options{})
		if got := h.PluginInfo()[0].Preinit; got != c.want {
			t.Errorf("%q: preinit %q, want %q", c.extra, got, c.want)
		}
	}
}
