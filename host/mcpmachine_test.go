package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/mcpclient"
)

// A machine identity's stored token (a discovered client credentials grant) has no
// refresh token: when it expires the host gets a new one with the same grant (the
// stored client, its secret in the header, the stored scopes and the entry's resource)
// and stores it, still marked as a machine identity's.
func TestAMachineIdentitysExpiredTokenIsRenewedByClientCredentials(t *testing.T) {
	var asked []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, _ := r.BasicAuth()
		asked = append(asked, id+":"+secret+" "+r.PostForm.Encode())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "fresh", "token_type": "Bearer", "expires_in": 3600})
	}))
	defer ts.Close()
	ctx := context.Background()
	st, err := openStore(ctx, manifest.StoreConfig{Kind: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(st)
	c := manifest.MCPServerConfig{Name: "m", URL: "https://tools.example/mcp", OAuth: &manifest.MCPOAuthConfig{ClientID: "svc"}}
	old := storedGrant{Token: &oauth2.Token{AccessToken: "old", Expiry: time.Now().Add(-time.Hour)}, Discovered: &discovered{TokenURL: ts.URL,
		ClientID: "svc", ClientSecret: "s3cret", AuthStyle: oauth2.AuthStyleInHeader, Scopes: []string{"tools"}, Grant: mcpclient.GrantClientCredentials}}
	if err := saveGrantAt(ctx, st, oauthKV, "m", old); err != nil {
		t.Fatal(err)
	}
	src, err := tokenSourceAt(ctx, st, c, oauthKV, "m")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token()
	if err != nil || tok.AccessToken != "fresh" {
		t.Fatalf("token %v, %v", tok, err)
	}
	want := "svc:s3cret grant_type=client_credentials&resource=https%3A%2F%2Ftools.example%2Fmcp&scope=tools"
	if len(asked) != 1 || asked[0] != want {
		t.Fatalf("token requests %q, want [%q]", asked, want)
	}
	b, _, _ := st.KVGet(ctx, oauthKV, "m")
	var got storedGrant
	if err := json.Unmarshal(b, &got); err != nil || got.AccessToken != "fresh" || got.Discovered == nil || got.Discovered.Grant != mcpclient.GrantClientCredentials {
		t.Fatalf("stored %s (%v)", b, err)
	}
}
