package manifest

import (
	"reflect"
	"strings"
)

// suggestKey returns the known key nearest to an unknown one ("memroy" → "memory"), or
// "". key is the decoder's dotted path, e.g. "plugins.permissions.memroy": the known
// keys are the toml tags of the table it sits in.
func suggestKey(key string) string {
	parts := strings.Split(key, ".")
	t := reflect.TypeOf(Manifest{})
	for _, p := range parts[:len(parts)-1] {
		t = tableType(t)
		if t.Kind() == reflect.Map { // [providers.NAME]: the name is the user's
			t = t.Elem()
			continue
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return ""
		}
		t = f.Type
	}
	t = tableType(t)
	if t.Kind() != reflect.Struct {
		return ""
	}
	unknown := parts[len(parts)-1]
	best, bestDist := "", len(unknown)/2+1 // closer than half the word
	for i := 0; i < t.NumField(); i++ {
		name := tagName(t.Field(i))
		if name == "" || name == "-" {
			continue
		}
		if d := editDistance(unknown, name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// tableType sees through pointers and the slices of [[arrays of tables]].
func tableType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := 0; i < t.NumField(); i++ {
		if tagName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// editDistance is the Levenshtein distance of a and b, in bytes (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
