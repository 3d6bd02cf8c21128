package seal

import "errors"

// A store that has ever been opened with keys keeps a marker row (the host's own kv
// namespace, which no plugin can take), so that the rule below is the same for every store.
const (
	MarkerPlugin = "agenthost/store"
	MarkerKey    = "sealed"
	// MarkerMixed: keys were added to a store that had data; plain values may remain.
	MarkerMixed = "mixed"
	// MarkerAll: every value is sealed (a store keyed from its start, or after Reseal); a
	// plain value is then a downgrade and is refused (Keys.Strict).
	MarkerAll = "all"
)

// Mode is what a store opens with. marker is the marker row's value (nil: none); empty
// reports whether the store holds no entry, value or memory yet (asked only for a store
// without a marker that is given keys). It returns the ring to use (nil: no sealing;
// strict once everything is sealed), whether plain values may remain, and the marker to
// write ("" for none). A marked store opened without keys is ErrLocked.
func Mode(marker []byte, keys *Keys, empty func() (bool, error)) (use *Keys, mixed bool, write string, err error) {
	switch {
	case keys == nil && marker != nil:
		return nil, false, "", ErrLocked
	case keys == nil:
		return nil, false, "", nil
	case marker == nil:
		e, err := empty()
		if err != nil {
			return nil, false, "", err
		}
		write = MarkerMixed
		if e {
			write = MarkerAll
		}
		marker = []byte(write)
	}
	switch string(marker) {
	case MarkerAll:
		return keys.Strict(), false, write, nil
	case MarkerMixed:
		return keys, true, write, nil
	}
	return nil, false, "", errors.New("the store's seal marker is unreadable: " + string(marker))
}
