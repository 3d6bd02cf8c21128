package loop

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argsSchema validates tool arguments and output documents against a JSON Schema.
type argsSchema struct {
	schema *jsonschema.Schema
	flat   *flatSchema // the fast path, when the schema is flat (schemafast.go)
}

var schemaPrinter = message.NewPrinter(language.English)

// schemaBase is the URL a schema is compiled under; references relative to it name
// other documents, which are never loaded.
const schemaBase = "mem://schema/"

// errExternalRef is wrapped by the error for a schema that refers outside itself.
var errExternalRef = errors.New("only references into the same schema (#/$defs/…, #anchor) are resolved")

// noLoader refuses every document a schema refers to. Schemas come from HTTP clients,
// plugins, MCP servers and the model's tools: the compiler's default loader reads
// file: URLs, so a schema holding {"$ref": "file:///…"} would read the host's files
// (and an HTTP loader would make the host a request forwarder). In-document references
// ($defs, definitions, anchors, $id within the document) and the standard meta-schemas,
// which the compiler carries, need no loader.
type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errExternalRef }

func compileSchema(name string, raw []byte) (*argsSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := schemaBase + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	s, err := c.Compile(url)
	var le *jsonschema.LoadURLError
	switch {
	case errors.As(err, &le) && errors.Is(le.Err, errExternalRef):
		// A relative reference is reported as written, not under the made-up base.
		return nil, fmt.Errorf("input schema refers to %q: %w", strings.TrimPrefix(le.URL, schemaBase), errExternalRef)
	case err != nil:
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return &argsSchema{schema: s, flat: flatSchemaOf(raw)}, nil
}

// validate checks a JSON document and returns an error naming each failing field, e.g.
// "/expression: got number, want string; /: missing property 'x'". The document is
// decoded by the validator itself so numbers keep their exact text.
func (s *argsSchema) validate(doc string) error {
	if s.flat != nil && s.flat.accepts(doc) {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = s.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var msgs []string
	collectLeaves(ve, &msgs)
	sort.Strings(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

func collectLeaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		*out = append(*out, loc+": "+ve.ErrorKind.LocalizedString(schemaPrinter))
		return
	}
	for _, c := range ve.Causes {
		collectLeaves(c, out)
	}
}

// Schema is a compiled JSON Schema, for surfaces outside the loop that check documents
// the way the loop checks tool arguments (workflow inputs): the same compiler, the same
// refusal of external references, the same error naming each failing field.
type Schema struct{ s *argsSchema }

// CompileSchema compiles raw (a JSON Schema document); name only labels the resource.
func CompileSchema(name string, raw []byte) (*Schema, error) {
	s, err := compileSchema(name, raw)
	if err != nil {
		return nil, err
	}
	return &Schema{s}, nil
}

// Validate checks the JSON document doc.
func (s *Schema) Validate(doc []byte) error { return s.s.validate(string(doc)) }

// ValidateAgainst checks a JSON document against a JSON Schema with the loop's own
// rules (no external references are loaded): for surfaces that judge documents outside
// a run, such as `agenthost eval`, so that they accept exactly what a run would.
func ValidateAgainst(schema []byte, doc string) error {
	s, err := compileSchema("expect", schema)
	if err != nil {
		return err
	}
	return s.validate(doc)
}
