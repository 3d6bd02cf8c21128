package workflow

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// UnmarshalYAML implements yaml.Unmarshaler for workflow files: the values become what
// the TOML and JSON decoders give (string keys, no YAML-only types), so a definition
// means the same whichever format it is written in.
func (t *Table) UnmarshalYAML(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	v, err := plainYAML(v)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("line %d: must be a mapping, not %T", n.Line, v)
	}
	*t = m
	return nil
}

func plainYAML(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p, err := plainYAML(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			x[k] = p
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			p, err := plainYAML(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ks, err)
			}
			out[ks] = p
		}
		return out, nil
	case []any:
		for i, e := range x {
			p, err := plainYAML(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			x[i] = p
		}
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		if x > 1<<63-1 {
			return nil, fmt.Errorf("number %d is too large", x)
		}
		return int64(x), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	}
	return v, nil
}
