package store

import (
	sjson "github.com/segmentio/encoding/json"
)

// marshalEntry and unmarshalEntry are encoding/json's Marshal and Unmarshal of an
// entry body, done by github.com/segmentio/encoding/json: the same JSON, read and
// written with codecs compiled once per type instead of reflection per value.
func marshalEntry(v any) ([]byte, error) { return sjson.Marshal(v) }

func unmarshalEntry(b []byte, v any) error { return sjson.Unmarshal(b, v) }
