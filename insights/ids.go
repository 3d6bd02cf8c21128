package insights

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A suggestion's id is two parts, "3f2a9c1b-77aa01de": its kind and target, and the
// manifest text it was computed against. The first finds it again among the
// suggestions computed later (new runs may change its evidence, not its id); the second
// tells that the manifest changed since, so that a change reviewed against one file is
// never applied to another.

// ErrUnknownSuggestion is an id no current suggestion has.
var ErrUnknownSuggestion = errors.New("no such suggestion")

// ErrStaleSuggestion is an id computed against a manifest that has changed since.
var ErrStaleSuggestion = errors.New("the manifest changed since the suggestion was computed")

// Stamp sets each suggestion's ID for the manifest text it is computed against.
func Stamp(sug []Suggestion, manifest []byte) {
	m := digest8(string(manifest))
	for i := range sug {
		sug[i].ID = digest8(sug[i].Kind+"\x00"+sug[i].Target) + "-" + m
	}
}

// Find returns the suggestion with id among sug (stamped against manifest): an
// ErrUnknownSuggestion when none has it, an ErrStaleSuggestion when one has its first
// part but the manifest is no longer the text it was computed against.
func Find(sug []Suggestion, id string, manifest []byte) (Suggestion, error) {
	which, _, ok := strings.Cut(id, "-")
	if ok {
		for _, s := range sug {
			if s.ID == id {
				return s, nil
			}
			if strings.HasPrefix(s.ID, which+"-") {
				return Suggestion{}, fmt.Errorf("suggestion %s: %w (its id is now %s: review it again)", id, ErrStaleSuggestion, s.ID)
			}
		}
	}
	return Suggestion{}, fmt.Errorf("%w %q", ErrUnknownSuggestion, id)
}

func digest8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
