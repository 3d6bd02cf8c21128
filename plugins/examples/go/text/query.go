//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// query walks a decoded JSON document along a path such as "a.b[2].c" or
// "a.b.2.c".
func query(doc, path string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	steps := strings.FieldsFunc(strings.NewReplacer("[", ".", "]", "").Replace(path), func(r rune) bool { return r == '.' })
	walked := "$"
	for _, step := range steps {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[step]
			if !ok {
				return nil, fmt.Errorf("%s has no key %q", walked, step)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil {
				return nil, fmt.Errorf("%s is an array; %q is not an index", walked, step)
			}
			if i < 0 || i >= len(node) {
				return nil, fmt.Errorf("%s has %d elements; index %d is out of range", walked, len(node), i)
			}
			v = node[i]
		default:
			return nil, fmt.Errorf("%s is not an object or array; cannot select %q", walked, step)
		}
		walked += "." + step
	}
	return v, nil
}
