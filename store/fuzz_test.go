package store

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeEntry feeds decodeEntry (what Load applies to every stored row) hostile
// bodies: it must return an entry or an error, never panic, and an entry it accepts must
// survive another encode/decode unchanged, so what the loop reads back is what it would
// write. Seeds: testdata/fuzz/FuzzDecodeEntry (one entry of every kind and event type).
func FuzzDecodeEntry(f *testing.F) {
	f.Add(int64(1), []byte(`{"seq":1,"run_id":"r","time":"2023-11-14T22:13:20Z","kind":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`))
	f.Fuzz(func(t *testing.T, seq int64, body []byte) {
		e, err := decodeEntry(seq, body)
		if err != nil {
			return
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("accepted entry does not encode: %v", err)
		}
		e2, err := decodeEntry(seq, again)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v\n%s", err, again)
		}
		third, _ := json.Marshal(e2)
		if !bytes.Equal(again, third) {
			t.Fatalf("entry changes on a round trip:\n%s\n%s", again, third)
		}
	})
}
