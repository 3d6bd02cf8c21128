package workflow

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A step's record is encoded by hand (appendStep); every field, every string that needs
// an escape and every time must come out as json.Marshal makes it, or a stored record
// would differ from what a reader that re-encodes it sees.
func TestAStepsHandEncodingIsJSONMarshalsForHostileFields(t *testing.T) {
	strs := []string{"", "ok", `quote " and \ backslash`, "<script>&amp;</script>", "a<b", `say "hi"`, `C:\dir`, "a>b", "a&b", "tab\tnew\nline\x00nul\x1f",
		"\x7f del", "é ü 漢字 😀", "\u2028\u2029 line separators", "invalid \xff\xfe utf-8", "half \xe2\x82"}
	zone := time.FixedZone("odd", -(3*3600 + 30*60 + 17))
	times := []time.Time{{}, time.Date(2026, 11, 28, 0, 30, 0, 123456789, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, zone), time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local), time.Unix(0, 0).In(zone)}
	outputs := []any{nil, "text", 3.5, map[string]any{"z": 1.0, "a": []any{"<", nil, true}}, []any{}, map[string]any{}, json.RawMessage(`{"b":1, "a" : 2}`)}
	var recs []*StepRecord
	for i, s := range strs {
		recs = append(recs, &StepRecord{Status: s, Error: s, Started: times[i%len(times)], Ended: times[(i+2)%len(times)],
			Attempts: i - 3, Output: outputs[i%len(outputs)]})
	}
	for i, o := range outputs {
		recs = append(recs, &StepRecord{Status: StatusOK, Output: o, Items: []*ItemRecord{{Status: StatusOK, Output: o}, nil, {Status: StatusFailed, Error: strs[i]}}})
	}
	recs = append(recs, nil, &StepRecord{}, &StepRecord{Items: []*ItemRecord{}})
	for _, id := range strs {
		for _, sr := range recs {
			got, err := appendStepValue(append(appendString(nil, id), ':'), sr)
			kb, _ := json.Marshal(id)
			vb, werr := json.Marshal(sr)
			want := append(append(kb, ':'), vb...)
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("id %q record %+v:\n got  %s (%v)\n want %s (%v)", id, sr, got, err, want, werr)
			}
		}
	}
	// A time json.Marshal refuses is refused the same way, not written.
	bad := &StepRecord{Status: StatusOK, Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, werr := json.Marshal(bad); werr == nil {
		t.Fatal("json.Marshal took year 10000")
	}
	if b, err := appendStepValue(nil, bad); err == nil {
		t.Fatalf("year 10000 encoded: %s", b)
	}
}

// A tool step's fixed arguments are encoded once, when the workflow compiles, as its
// calls send them (json.Marshal's bytes, none is {}); arguments with an ${expr} are
// encoded at each call.
func TestAToolStepsFixedArgumentsAreEncodedOnceAtCompile(t *testing.T) {
	w, err := Compile("args", Definition{Steps: []Step{
		{ID: "a", Tool: "join", Arguments: map[string]any{"words": []any{"x", "<y>"}, "n": 2}},
		{ID: "b", Tool: "join"},
		{ID: "c", Tool: "join", Arguments: map[string]any{"words": []any{"${steps.a.output}"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(w.byID["a"].argsB); got != `{"n":2,"words":["x","\u003cy\u003e"]}` {
		t.Fatalf("a's arguments encoded %s", got)
	}
	if got := string(w.byID["b"].argsB); got != `{}` {
		t.Fatalf("b's (none) encoded %s", got)
	}
	if w.byID["c"].argsB != nil {
		t.Fatalf("c's arguments (an expression) were encoded at compile: %s", w.byID["c"].argsB)
	}
}
