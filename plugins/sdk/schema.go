package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// SchemaOf derives the JSON Schema of a tool's arguments from a Go struct.
//
//   - the property name is the `json` tag name (or the field name); "-" skips
//     the field; unexported fields are skipped
//   - a field is required unless its tag has omitempty or it is a pointer
//   - `description:"..."` becomes the property's description
//   - string, bool, integers ("integer"), floats ("number"), slices and
//     arrays ("array" with items), maps with string keys ("object" with
//     additionalProperties), nested structs, and json.RawMessage / any
//     (no type: any JSON value)
//
// The properties keep the order of the struct's fields (encoding/json would
// sort a map; a schema is easier to read in declaration order).
func SchemaOf(v any) (json.RawMessage, error) {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema of %T: arguments must be a struct", v)
	}
	var b strings.Builder
	if err := writeSchema(&b, t, ""); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	return json.RawMessage(b.String()), nil
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func writeSchema(b *strings.Builder, t reflect.Type, description string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	b.WriteByte('{')
	if description != "" {
		b.WriteString(`"description":`)
		writeJSONString(b, description)
		b.WriteByte(',')
	}
	var err error
	switch {
	case t == rawMessageType || t.Kind() == reflect.Interface:
		// any JSON value: no type constraint
	case t.Kind() == reflect.String:
		b.WriteString(`"type":"string"`)
	case t.Kind() == reflect.Bool:
		b.WriteString(`"type":"boolean"`)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		b.WriteString(`"type":"integer"`)
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		b.WriteString(`"type":"number"`)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		b.WriteString(`"type":"array","items":`)
		err = writeSchema(b, t.Elem(), "")
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		b.WriteString(`"type":"object","additionalProperties":`)
		err = writeSchema(b, t.Elem(), "")
	case t.Kind() == reflect.Struct:
		err = writeObject(b, t)
	default:
		err = fmt.Errorf("unsupported type %s", t)
	}
	trimComma(b)
	b.WriteByte('}')
	return err
}

func writeObject(b *strings.Builder, t reflect.Type) error {
	b.WriteString(`"type":"object","properties":{`)
	var required []string
	n := 0
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeJSONString(b, name)
		b.WriteByte(':')
		if err := writeSchema(b, f.Type, f.Tag.Get("description")); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if !strings.Contains(","+opts+",", ",omitempty,") && f.Type.Kind() != reflect.Pointer {
			required = append(required, name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		b.WriteString(`,"required":`)
		r, _ := json.Marshal(required)
		b.Write(r)
	}
	return nil
}

func writeJSONString(b *strings.Builder, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

func trimComma(b *strings.Builder) {
	s := b.String()
	if strings.HasSuffix(s, ",") {
		b.Reset()
		b.WriteString(s[:len(s)-1])
	}
}
