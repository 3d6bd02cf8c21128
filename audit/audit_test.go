package audit

import (
	"strings"
	"testing"
	"time"
)

func chain(n int) []Record {
	var out []Record
	var prev *Record
	for i := range n {
		r := Record{Time: time.Date(2026, 11, 24, 10, i, 0, 0, time.UTC), Action: ActionRunStart, Actor: "ana", Target: "s1/r1",
			Detail: map[string]string{"agent": "helper"}}
		Chain(&r, prev)
		out = append(out, r)
		prev = &out[len(out)-1]
	}
	return out
}

// A chain verifies; a record changed, removed or reordered afterwards breaks it where
// it happened.
func TestAChangedRemovedOrInsertedRecordBreaksTheChain(t *testing.T) {
	rs := chain(5)
	if err := Verify(rs); err != nil {
		t.Fatal(err)
	}
	changed := append([]Record(nil), rs...)
	changed[2].Actor = "bob"
	removed := append(append([]Record(nil), rs[:2]...), rs[3:]...)
	forged := append([]Record(nil), rs...)
	forged[2].Detail = map[string]string{"agent": "other"}
	forged[2].Hash = hashOf(forged[2]) // rehashed, but record 3 still names the old hash
	for name, c := range map[string]struct {
		rs   []Record
		want string
	}{
		"changed": {changed, "audit record 3 was changed after it was written"},
		"removed": {removed, "audit record 4 follows 2: 1 records are missing"},
		"forged":  {forged, "audit record 4 does not follow record 3"},
	} {
		if err := Verify(c.rs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
