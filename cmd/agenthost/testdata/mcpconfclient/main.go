// Command mcpconfclient is the client the MCP conformance suite drives
// (`conformance client --command "mcpconfclient"`): agenthost's own MCP client, as an
// agent uses it. For the scenario the suite names (MCP_CONFORMANCE_SCENARIO) and the
// server URL it appends, it writes a manifest whose [[mcp_servers]] entry is that URL and
// whose scripted model calls the scenario's tool, then runs `agenthost run` on it; the
// person at the terminal (stdin) accepts an elicitation and leaves every field empty, so
// the defaults of its schema apply; a URL the run prints (a server asking for more
// scope) is opened as a browser would. AGENTHOST_BIN is the agenthost binary and
// AGENTHOST_SCRIPTED the scripted provider's (cmd/agenthost/mcp_conformance_e2e_test.go
// sets both).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// calls are the tool each scenario's model calls, with its arguments; a scenario not
// listed only connects (initialize and tools/list) and answers.
var calls = map[string][2]string{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"sse-retry":                           {"test_reconnection", `{}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
}

// authCall is what the model calls in the auth/* scenarios, after `mcp login`.
var authCall = [2]string{"test-tool", `{}`}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcpconfclient SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	dir, err := os.MkdirTemp("", "mcpconfclient")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	auth := strings.HasPrefix(scenario, "auth/")
	if auth {
		calls[scenario] = authCall
	}
	turns := []any{map[string]any{"text": "done"}}
	if c, ok := calls[scenario]; ok {
		turns = []any{map[string]any{"tool_calls": []map[string]string{{"id": "c1", "name": c[0], "arguments": c[1]}}},
			map[string]any{"text": "{{result c1}}"}}
	}
	script, _ := json.Marshal(map[string]any{"turns": turns})
	if err := os.WriteFile(filepath.Join(dir, "script.json"), script, 0o600); err != nil {
		fail(err)
	}
	manifest := fmt.Sprintf(`[agent]
name = "conformance"
provider = "scripted"
model = "demo"
[agent.tool_policy]
approval_default = "allow"
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
kind = "sqlite"
path = "sessions.db"
[[mcp_servers]]
name = "conformance"
url = %q
elicitation = true
timeout = "20s"
`, os.Getenv("AGENTHOST_SCRIPTED"), os.Args[1])
	if auth {
		manifest += oauthTable()
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o600); err != nil {
		fail(err)
	}
	if auth {
		if err := login(dir); err != nil {
			fail(err)
		}
	}
	cmd := exec.Command(os.Getenv("AGENTHOST_BIN"), "-c", filepath.Join(dir, "agent.toml"), "run", "go")
	cmd.Dir = dir
	// An elicitation: answer it (y), then an empty line for each field.
	cmd.Stdin = strings.NewReader("y\n" + strings.Repeat("\n", 20))
	cmd.Stdout = os.Stdout
	// A server asking for more scope during the run: the run prints the URL that signs
	// in again, which the browser opens as at the login.
	if err := browsing(cmd); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mcpconfclient:", err)
	os.Exit(1)
}

// oauthTable is the entry's oauth table: no endpoint (they are discovered); the
// pre-registered client the scenario gives (MCP_CONFORMANCE_CONTEXT), else a client ID
// metadata document's URL, which falls back to dynamic registration.
func oauthTable() string {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c)
	if c.ClientID == "" {
		return "[mcp_servers.oauth]\nclient_id = \"https://conformance-test.local/client-metadata.json\"\n"
	}
	os.Setenv("CONFORMANCE_CLIENT_SECRET", c.ClientSecret)
	t := fmt.Sprintf("[mcp_servers.oauth]\nclient_id = %q\n", c.ClientID)
	if c.ClientSecret != "" {
		t += "client_secret_env = \"CONFORMANCE_CLIENT_SECRET\"\n"
	}
	return t
}

// login runs `agenthost mcp login` and is the person's browser: it opens each URL the
// command prints, whose authorization server redirects at once to the command's loopback
// callback, and follows that redirect.
func login(dir string) error {
	cmd := exec.Command(os.Getenv("AGENTHOST_BIN"), "-c", filepath.Join(dir, "agent.toml"), "mcp", "login", "conformance")
	cmd.Dir = dir
	return browsing(cmd)
}

// browsing runs cmd, copying its stderr and opening each URL it prints there on a line
// of its own, as the person's browser.
func browsing(cmd *exec.Cmd) error {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://") {
			if err := browse(line); err != nil {
				// No redirect will come back: the command would wait for it in vain.
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				return fmt.Errorf("browser: %w", err)
			}
		}
	}
	return cmd.Wait()
}

// browse opens the authorization URL without following its redirect, then opens the
// redirect's target (the login's callback), as a browser would.
func browse(authURL string) error {
	c := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Errorf("%s: status %d and no redirect", authURL, resp.StatusCode)
	}
	resp, err = c.Get(loc)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
