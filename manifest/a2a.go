package manifest

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sync"
)

// A2AAgentConfig is one [[a2a_agents]] entry: a remote agent the agent may call over A2A
// as the tool a2a_NAME (a2abridge).
type A2AAgentConfig struct {
	Name        string   `toml:"name"`
	URL         string   `toml:"url"`       // the remote agent's A2A JSON-RPC endpoint
	TokenEnv    string   `toml:"token_env"` // the variable holding its bearer token
	Description string   `toml:"description"`
	Timeout     Duration `toml:"timeout"`    // one call; default 2m
	MaxOutput   Size     `toml:"max_output"` // the answer's bound; default 1MiB
}

var a2aName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,48}$`) })

func (m *Manifest) checkA2A() error {
	seen := map[string]bool{}
	for i, a := range m.A2AAgents {
		key := fmt.Sprintf("a2a_agents[%d]", i)
		switch {
		case !a2aName().MatchString(a.Name):
			return m.ErrorAt(key+".name", "name %q: 1-48 letters, digits, _ or -", a.Name)
		case seen[a.Name]:
			return m.ErrorAt(key+".name", "duplicate A2A agent %q", a.Name)
		}
		seen[a.Name] = true
		if err := checkA2AURL(a.URL); err != nil {
			return m.ErrorAt(key+".url", "%v", err)
		}
		if a.TokenEnv != "" && os.Getenv(a.TokenEnv) == "" {
			return m.ErrorAt(key+".token_env", "%s is not set", a.TokenEnv)
		}
	}
	return nil
}

// checkA2AURL accepts only absolute http and https URLs: a remote agent is reached over
// HTTP (a2abridge), never through a file: or other scheme.
func checkA2AURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	return nil
}
