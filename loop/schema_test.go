package loop

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSchemaRefToAFileIsRefusedNotRead: a schema that refers to a file is refused with
// a clear error, whether the file is JSON the compiler could load or not.
func TestSchemaRefToAFileIsRefusedNotRead(t *testing.T) {
	valid := filepath.Join(t.TempDir(), "evil.json")
	if err := os.WriteFile(valid, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file:///etc/passwd", "file://" + valid} {
		_, err := compileSchema("t", []byte(fmt.Sprintf(`{"type":"object","properties":{"p":{"$ref":%q}}}`, ref)))
		want := fmt.Sprintf("input schema refers to %q: only references into the same schema (#/$defs/…, #anchor) are resolved", ref)
		if !errors.Is(err, errExternalRef) || err.Error() != want {
			t.Fatalf("$ref %s: %v\nwant %s", ref, err, want)
		}
	}
}

// TestSchemaRefToAURLIsRefusedWithoutARequest: a reference to an HTTP URL, a relative
// one, and a $schema naming a meta-schema of its own are refused, and the loopback
// server they name is never asked.
func TestSchemaRefToAURLIsRefusedWithoutARequest(t *testing.T) {
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type": "string"}`))
	}))
	defer hs.Close()
	for _, tc := range []struct{ schema, refersTo string }{
		{fmt.Sprintf(`{"$ref": %q}`, hs.URL+"/x"), hs.URL + "/x"},
		{fmt.Sprintf(`{"$ref": %q}`, strings.Replace(hs.URL, "http:", "https:", 1)+"/x"), strings.Replace(hs.URL, "http:", "https:", 1) + "/x"},
		{`{"properties": {"p": {"$ref": "other.json#/x"}}}`, "other.json"},
		{fmt.Sprintf(`{"$schema": %q, "type": "object"}`, hs.URL+"/meta"), hs.URL + "/meta"},
	} {
		_, err := compileSchema("t", []byte(tc.schema))
		if !errors.Is(err, errExternalRef) || !strings.HasPrefix(err.Error(), fmt.Sprintf("input schema refers to %q: ", tc.refersTo)) {
			t.Errorf("%s: %v", tc.schema, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server was asked %d times", n)
	}
}

// TestSchemaInDocumentRefsStillWork: references into the schema itself ($defs, an
// anchor, a JSON pointer) and a standard $schema compile and validate.
func TestSchemaInDocumentRefsStillWork(t *testing.T) {
	s, err := compileSchema("t", []byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {
			"a": {"$ref": "#/$defs/x"},
			"b": {"$ref": "#named"},
			"c": {"$ref": "#/properties/a"}
		},
		"$defs": {"x": {"type": "string"}, "y": {"$anchor": "named", "type": "integer"}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.validate(`{"a": "s", "b": 1, "c": "t"}`); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	if err := s.validate(`{"a": 1, "b": "s", "c": 2}`); err == nil ||
		err.Error() != "/a: got number, want string; /b: got string, want integer; /c: got number, want string" {
		t.Fatalf("invalid document: %v", err)
	}
	if _, err := compileSchema("d7", []byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"x": {"type": "string"}}, "$ref": "#/definitions/x"}`)); err != nil {
		t.Fatalf("draft-07 with definitions: %v", err)
	}
}
