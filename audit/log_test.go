package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// logOf is a log of n records after its genesis.
func logOf(n int) []Record {
	g := Genesis(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	out := []Record{g}
	for i := range n {
		r := Record{Time: time.Date(2026, 11, 24, 10, i, 0, 0, time.UTC), Action: ActionRunStart, Actor: "ana", Target: "s1/r1"}
		Chain(&r, &out[len(out)-1])
		out = append(out, r)
	}
	return out
}

// rechain rewrites records as an attacker with write access would: renumbered from 1
// and rehashed, so that the chain holds.
func rechain(rs []Record) []Record {
	var out []Record
	for _, r := range rs {
		var prev *Record
		if len(out) > 0 {
			prev = &out[len(out)-1]
		}
		Chain(&r, prev)
		out = append(out, r)
	}
	return out
}

// A whole log begins with its genesis; a deleted head, a deleted middle and a
// renumbering are each found, and named.
func TestVerifyLogFindsADeletedHeadADeletedMiddleAndARenumbering(t *testing.T) {
	rs := logOf(6)
	cp, err := VerifyLog(rs, false)
	if err != nil || cp.Records != 7 || cp.Head != rs[6].Hash || cp.Log != rs[0].Hash || cp.Legacy {
		t.Fatalf("VerifyLog = %+v, %v", cp, err)
	}
	renumbered := append(append([]Record(nil), rs[:3]...), rs[4:]...)
	for i := 3; i < len(renumbered); i++ {
		renumbered[i].Seq--
	}
	headless := append([]Record(nil), rs[2:]...)
	for i := range headless {
		headless[i].Seq -= 2
	}
	for name, c := range map[string]struct {
		rs   []Record
		want string
	}{
		"deleted head":             {rs[2:], "the audit log begins at record 3: records 1 to 2 were deleted"},
		"deleted genesis":          {rs[1:], "the audit log begins at record 2"},
		"deleted middle":           {append(append([]Record(nil), rs[:3]...), rs[4:]...), "audit record 5 follows 3: 1 records are missing"},
		"renumbered after delete":  {renumbered, "audit record 4 does not follow record 3"},
		"head deleted, renumbered": {headless, "no genesis record: record 1 is a \"run.start\" record"},
		"every record deleted":     {nil, "the audit log is empty"},
		"a second genesis":         {rechain(append(append([]Record(nil), rs...), Genesis(time.Now()))), "audit record 8 is a second genesis record"},
	} {
		if _, err := VerifyLog(c.rs, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// A log begun before genesis records is refused unless legacy is asked for, and then
// still verified from record 1.
func TestALegacyLogIsReportedAndAcceptedOnlyWhenAskedFor(t *testing.T) {
	legacy := rechain(logOf(3)[1:])
	_, err := VerifyLog(legacy, false)
	var ng *NoGenesisError
	if !errors.As(err, &ng) || ng.First.Seq != 1 {
		t.Fatalf("a legacy log: %v", err)
	}
	cp, err := VerifyLog(legacy, true)
	if err != nil || !cp.Legacy || cp.Records != 3 || cp.Log != legacy[0].Hash {
		t.Fatalf("legacy accepted: %+v %v", cp, err)
	}
	if _, err := VerifyLog(legacy[1:], true); err == nil || !strings.Contains(err.Error(), "begins at record 2") {
		t.Fatalf("a legacy log without its head: %v", err)
	}
}

// A checkpoint finds what VerifyLog cannot: a cut tail, and a log rewritten with a
// valid chain (a new genesis, or the same genesis and rewritten records).
func TestACheckpointFindsACutTailAndARewrittenLog(t *testing.T) {
	rs := logOf(6)
	cp, err := VerifyLog(rs, false)
	if err != nil {
		t.Fatal(err)
	}
	grown := append(append([]Record(nil), rs...), Record{Action: ActionRunEnd, Actor: "ana"})
	Chain(&grown[7], &grown[6])
	if err := VerifyCheckpoint(grown, cp); err != nil {
		t.Fatalf("a log grown since the checkpoint: %v", err)
	}
	edited := append([]Record(nil), rs...)
	edited[3].Actor = "mallory"
	edited = rechain(edited)
	replaced := rechain(append([]Record{Genesis(time.Now())}, rs[3:]...))
	for name, c := range map[string]struct {
		rs   []Record
		want string
	}{
		"cut tail":               {rs[:5], "the audit log holds 5 records, the checkpoint 7: records 6 to 7 were deleted"},
		"rewritten, one genesis": {edited, "audit record 7 is not the one checkpointed"},
		"replaced, new genesis":  {replaced, "the audit log is not the one checkpointed"},
	} {
		if _, err := VerifyLog(c.rs, false); err != nil {
			t.Fatalf("%s: the rewrite was meant to verify alone: %v", name, err)
		}
		if err := VerifyCheckpoint(c.rs, cp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// A checkpoint reads back as written; anything else is refused.
func TestReadCheckpointRefusesWhatIsNotOne(t *testing.T) {
	cp, _ := VerifyLog(logOf(2), false)
	b, _ := json.Marshal(cp)
	got, err := ReadCheckpoint(bytes.NewReader(b))
	if err != nil || got.Head != cp.Head || got.Records != 3 || !got.Time.Equal(cp.Time) {
		t.Fatalf("ReadCheckpoint = %+v %v", got, err)
	}
	h := strings.Repeat("a", 64)
	for name, in := range map[string]string{
		"empty":         "",
		"not json":      "\xff\xfe",
		"other format":  `{"format": "x", "log": "` + h + `", "records": 1, "head": "` + h + `"}`,
		"unknown field": `{"format": "` + CheckpointFormat + `", "log": "` + h + `", "records": 1, "head": "` + h + `", "x": 1}`,
		"short hash":    `{"format": "` + CheckpointFormat + `", "log": "ab", "records": 1, "head": "` + h + `"}`,
		"upper hex":     `{"format": "` + CheckpointFormat + `", "log": "` + strings.ToUpper(h) + `", "records": 1, "head": "` + h + `"}`,
		"no records":    `{"format": "` + CheckpointFormat + `", "log": "` + h + `", "records": 0, "head": "` + h + `"}`,
		"huge":          `{"format": "` + strings.Repeat(" ", 1<<20) + `"}`,
	} {
		if _, err := ReadCheckpoint(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
