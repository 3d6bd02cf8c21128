package ociplugin

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
)

// A built bundle is pushed as a JSLayer artifact and cached as .js; a JSLayer whose
// bytes are not a built bundle (pushed by another tool) is refused before it is cached.
func TestAJSBundleIsItsOwnArtifactAndMustBeABuiltOne(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	bundle := []byte(JSBundleHeader + "\"t.ts\"\nrequire(\"agenthost\").tool({name: \"t\", handler: () => 1});\n")
	ref := "oci://" + host + "/plugins/t:1"
	if _, err := Push(bundle, ref, ""); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "oci")
	p, err := PullWith(ref, PullOptions{Cache: cache, Layer: JSLayer})
	if err != nil || p.Layer != JSLayer || filepath.Ext(p.Path) != ".js" || string(must(os.ReadFile(p.Path))) != string(bundle) {
		t.Fatalf("pull: %+v %v", p, err)
	}
	if _, err := PullWith(ref, PullOptions{Cache: cache, Layer: WasmLayer}); err == nil || !strings.Contains(err.Error(), `layer media type "`+string(JSLayer)+`", want `+string(WasmLayer)) {
		t.Fatalf("a bundle where a module is wanted: %v", err)
	}
	forged, _ := name.ParseReference(host+"/plugins/forged:1", name.Insecure)
	img, _ := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("module.exports = 1;\n"), JSLayer))
	if err := remote.Write(forged, img); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "oci")
	if _, err := PullWith("oci://"+host+"/plugins/forged:1", PullOptions{Cache: other}); err == nil || !strings.Contains(err.Error(), "layer is not a built bundle") {
		t.Fatalf("a forged bundle: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("the forged bundle was cached: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
