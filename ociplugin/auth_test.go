package ociplugin

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// A registry that wants a login: the credentials `docker login` leaves in the docker
// config are used for push and pull; without them the pull fails with the registry's
// refusal (and no password is ever put in agent.toml).
func TestAnAuthenticatedRegistryUsesTheDockerConfigCredentials(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "pa55" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := "oci://" + host + "/p/mod:1"
	module := []byte("\x00asm\x01\x00\x00\x00") // the smallest module: magic and version

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	if _, err := Push(module, ref, ""); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("push without credentials: %v", err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, base64.StdEncoding.EncodeToString([]byte("ci:pa55")))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if _, err := Push(module, ref, ""); err != nil {
		t.Fatalf("push with the docker config's credentials: %v", err)
	}
	got, err := PullWith(ref, PullOptions{Cache: t.TempDir()})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	b, _ := os.ReadFile(got.Path)
	if string(b) != string(module) {
		t.Fatalf("pulled %q", b)
	}
}
