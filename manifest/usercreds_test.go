package manifest

import (
	"maps"
	"strings"
	"testing"
)

// auth = "per_user" takes the authorization code grant (a person signs in), named or
// discovered; with client credentials, no oauth or another word it is refused with its
// key; redirect_url belongs to per-user entries and is https or http on loopback.
func TestManifestPerUserAuthNeedsAGrantAPersonSignsIn(t *testing.T) {
	code := `oauth = { authorize_url = "https://as.example.com/a", token_url = "https://as.example.com/t", client_id = "app"%s }`
	for _, c := range []struct{ entry, want string }{
		{"auth = \"per_user\"\n" + strings.Replace(code, "%s", "", 1), "per_user"},
		{"auth = \"per_user\"\noauth = {}", "per_user"},
		{"auth = \"per_user\"\n" + strings.Replace(code, "%s", `, redirect_url = "https://agents.example.com/v1/mcp/oauth/callback"`, 1), "per_user"},
		{"auth = \"host\"\n" + strings.Replace(code, "%s", "", 1), "host"},
		{strings.Replace(code, "%s", "", 1), "host"},
		{"auth = \"per_user\"", `mcp_servers[0].auth: auth = "per_user" needs an oauth table a person signs in to`},
		{"auth = \"per_user\"\noauth = { token_url = \"https://as.example.com/t\", client_id = \"app\", client_secret_env = \"S\" }", `mcp_servers[0].auth: auth = "per_user" needs`},
		{"auth = \"everyone\"", `mcp_servers[0].auth: auth "everyone": want "host" (the default) or "per_user"`},
		{strings.Replace(code, "%s", `, redirect_url = "https://x.example.com/cb"`, 1), "mcp_servers[0].oauth.redirect_url: redirect_url is for auth = \"per_user\""},
		{"auth = \"per_user\"\n" + strings.Replace(code, "%s", `, redirect_url = "http://agents.example.com/cb"`, 1), `mcp_servers[0].oauth.redirect_url: "http://agents.example.com/cb" must be https`},
	} {
		m, err := Load(writeManifest(t, goodManifest+"\n[[mcp_servers]]\nname = \"remote\"\nurl = \"https://mcp.example.com/mcp\"\n"+c.entry+"\n"))
		got := "host"
		switch {
		case err != nil:
			got = err.Error()
		case m.MCPServers[0].PerUser():
			got = "per_user"
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.entry, got, c.want)
		}
	}
}

// A config value { secret = "NAME", per_user = true } leaves the plugin's config for
// its per-user secrets, and the plugin then runs each call on a fresh instance; any other
// isolation, and every other shape of a value, is refused with the key.
func TestManifestPerUserSecretsLeaveTheConfigAndRunEachCallFresh(t *testing.T) {
	t.Setenv("PLAIN", "expanded")
	entry := "\n[[plugins]]\nname = \"gh\"\nwasm = \"calc.wasm\"\n[plugins.permissions]\n"
	m, err := Load(writeManifest(t, goodManifest+entry+`config = { token = { secret = "github", per_user = true }, plain = "${PLAIN}" }`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Plugins[2].Permissions
	if !maps.Equal(p.UserSecrets, map[string]string{"token": "github"}) || !maps.Equal(map[string]string(p.Config), map[string]string{"plain": "expanded"}) || p.Isolation != "call" {
		t.Fatalf("secrets %v, config %v, isolation %q", p.UserSecrets, p.Config, p.Isolation)
	}
	if m.Plugins[0].Permissions.UserSecrets != nil {
		t.Fatalf("a plugin without secrets has %v", m.Plugins[0].Permissions.UserSecrets)
	}
	for _, c := range []struct{ perms, want string }{
		{"isolation = \"session\"\nconfig = { token = { secret = \"github\", per_user = true } }", `plugins[2].permissions.isolation: plugin "gh" takes per-user secrets, so each call runs on a fresh instance`},
		{"isolation = \"call\"\nconfig = { token = { secret = \"github\", per_user = true } }", ""},
		{`config = { token = { secret = "github" } }`, `config token: a secret is { secret = "NAME", per_user = true }`},
		{`config = { token = { secret = "a b", per_user = true } }`, `config token: a secret is`},
		{`config = { token = { secret = "github", per_user = true, extra = 1 } }`, `config token: a secret is`},
		{`config = { token = 7 }`, `config token: a value is a string or { secret = "NAME", per_user = true }, not int64`},
		{`config = { token = "\u0000agenthost:per_user_secret:github" }`, `config token: a value may not start with a NUL`},
	} {
		_, err := Load(writeManifest(t, goodManifest+entry+c.perms+"\n"))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.perms, err, c.want)
		}
	}
}

// A tool that acts with the calling user's own credentials may cache its results per user
// or per session, never globally: a global entry would hand one user's answer to all.
func TestAGlobalCacheOnAToolWithPerUserCredentialsIsRefused(t *testing.T) {
	for _, c := range []struct{ scope, want string }{
		{"global", `plugins[2].cache.scope: scope "global" would share results of calls made with each user's own credentials`},
		{"user", ""},
		{"session", ""},
	} {
		entry := "\n[[plugins]]\nname = \"gh\"\nwasm = \"calc.wasm\"\ncache = { ttl = \"1m\", scope = \"" + c.scope + "\", tools = [\"calc\"] }\n" +
			"[plugins.permissions]\nconfig = { token = { secret = \"github\", per_user = true } }\n"
		_, err := Load(writeManifest(t, goodManifest+entry))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("scope %s: %v, want %q", c.scope, err, c.want)
		}
	}
}
