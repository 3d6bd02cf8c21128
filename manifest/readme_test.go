package manifest

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// tomlKeys lists the toml keys of a manifest struct and the structs inside it.
func tomlKeys(t reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if key == "" || key == "-" {
			continue
		}
		out[key] = true
		tomlKeys(f.Type, seen, out)
	}
}

// The README is the manifest's reference: every key the manifest accepts is named in it.
func TestReadmeNamesEveryManifestKey(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	keys := map[string]bool{}
	tomlKeys(reflect.TypeOf(Manifest{}), map[reflect.Type]bool{}, keys)
	var missing []string
	for k := range keys {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b`).MatchString(readme) {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("README.md does not name these manifest keys: %s", strings.Join(missing, ", "))
	}
}
