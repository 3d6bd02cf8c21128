package manifest

import "slices"

// checkFallback checks a tool's fallback list as far as the manifest can: names, not
// the tool itself, each once. Whether each names a loaded tool taking the same
// arguments (the same input schema) is checked when the agent is built, once the
// tools' schemas are known (host/toolfallback.go); a fallback is called with the
// failed call's arguments, so a tool that takes other arguments is refused there.
func (m *Manifest) checkFallback(t ToolDecl, key string) error {
	for i, f := range t.Fallback {
		switch {
		case f == "":
			return m.ErrorAt(key, "a fallback needs a tool's name")
		case f == t.Name:
			return m.ErrorAt(key, "tool %q cannot fall back to itself", t.Name)
		case slices.Contains(t.Fallback[:i], f):
			return m.ErrorAt(key, "fallback %q is listed twice", f)
		}
	}
	return nil
}
