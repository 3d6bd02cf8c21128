package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// cycloneDXSchema compiles CycloneDX's JSON schema for spec 1.6, from the module that
// carries CycloneDX's own schema files (cyclonedx-go, which the SBOM tool is built with:
// the release already brought it into the module cache).
func cycloneDXSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/CycloneDX/cyclonedx-go@v0.9.3").Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		t.Fatalf("go mod download cyclonedx-go: %v %s", err, out)
	}
	c := jsonschema.NewCompiler()
	for file, id := range map[string]string{"bom-1.6.schema.json": "bom-1.6.schema.json", "spdx.schema.json": "spdx.schema.json", "jsf-0.82.schemax.json": "jsf-0.82.schema.json"} {
		f, err := os.Open(filepath.Join(mod.Dir, "schema", file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err == nil {
			err = c.AddResource("http://cyclonedx.org/schema/"+id, doc)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	s, err := c.Compile("http://cyclonedx.org/schema/bom-1.6.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type sbomComponent struct {
	BOMRef     string `json:"bom-ref"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	Properties []struct{ Name, Value string }
}

// checkSBOM checks a release archive's SBOM (path), extracted into root: it is valid
// CycloneDX 1.6 (CycloneDX's own schema); its subject is this module at the release's
// version and the host binary by its sha256; each adapter is a component with its
// binary's sha256; and the modules the binaries link are there with the versions go.mod
// requires: cobra (the host's CLI) and the Anthropic SDK (linked by the Anthropic adapter
// only, so the adapters' SBOMs were merged in).
func checkSBOM(t *testing.T, path, version, root string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := cycloneDXSchema(t).Validate(inst); err != nil {
		t.Fatalf("%s is not valid CycloneDX 1.6: %v", path, err)
	}
	var bom struct {
		BOMFormat, SpecVersion string
		Metadata               struct {
			Component  sbomComponent
			Properties []struct{ Name, Value string }
		}
		Components []sbomComponent
	}
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatal(err)
	}
	const module = "github.com/agenthost/agenthost"
	main := bom.Metadata.Component
	if bom.BOMFormat != "CycloneDX" || main.Name != module || main.Version != version || main.Type != "application" {
		t.Fatalf("SBOM %s %s names %s %s (%s), want the application %s %s", bom.BOMFormat, bom.SpecVersion, main.Name, main.Version, main.Type, module, version)
	}
	main.Properties = bom.Metadata.Properties
	byRef := map[string]sbomComponent{"#cmd/agenthost": main}
	byName := map[string]sbomComponent{}
	for _, c := range bom.Components {
		if _, cmd, ok := strings.Cut(c.BOMRef, "#"); ok && c.Name == module {
			byRef["#"+cmd] = c
		}
		byName[c.Name] = c
	}
	for _, bin := range []string{"agenthost", "agenthost-provider-scripted", "agenthost-provider-openai", "agenthost-provider-anthropic", "agenthost-sigstore"} {
		b, err := os.ReadFile(filepath.Join(root, bin))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		c, ok := byRef["#cmd/"+bin]
		if !ok || c.Version != version || prop(c, "cdx:gomod:binary:hash:SHA-256") != hex.EncodeToString(sum[:]) {
			t.Errorf("the SBOM's cmd/%s: %+v, want version %s and the binary's sha256 %x", bin, c, version, sum)
		}
	}
	for _, dep := range []string{"github.com/spf13/cobra", "github.com/anthropics/anthropic-sdk-go", "github.com/sigstore/sigstore-go"} {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", dep).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", dep, err)
		}
		want := strings.TrimSpace(string(out))
		if c := byName[dep]; c.Version != want || c.Type != "library" {
			t.Errorf("the SBOM's %s: %+v, want the library at %s (go.mod)", dep, c, want)
		}
	}
}

func prop(c sbomComponent, name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}
