package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// FuzzTranscriptChunk: what a chunk decodes to is exactly what the entry's JSON decodes
// to, whatever its strings hold (invalid UTF-8 included), and arbitrary bytes given as
// a chunk are an error, never a panic.
func FuzzTranscriptChunk(f *testing.F) {
	f.Add("user", "hello", "call-1", "{\"a\":1}", "reason", int64(7), 2, []byte("AHT1"), int64(0))
	f.Add("tool", "\xff\xfe bad", "c\x80", "", "", int64(1), 0, []byte{}, int64(3600))
	f.Fuzz(func(t *testing.T, role, text, id, args, reasoning string, size int64, replace int, raw []byte, off int64) {
		at := time.Unix(1_800_000_000, 123456789).In(time.FixedZone("", int(off%86400)))
		es := []loop.Entry{
			{Seq: 1, RunID: id, Time: at, Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.Role(role),
				Content:    []loop.Part{{Type: loop.PartText, Text: text, Size: size, Name: args, Data: raw}},
				ToolCalls:  []loop.ToolCall{{ID: id, Name: text, Arguments: args}},
				ToolCallID: id, Reasoning: reasoning, ReasoningState: text}},
			{Seq: 2, Kind: loop.EntryCompaction, Time: at.UTC(), Compaction: &loop.Compaction{Replace: replace,
				Summary: []loop.Message{{Role: loop.Role(role), Content: []loop.Part{}}, {Name: reasoning}}}},
			{Seq: 3, Kind: loop.EntryMessage, Message: &loop.Message{}, Compaction: &loop.Compaction{}},
		}
		var add encodedEntry
		var n counts
		var want []loop.Entry
		for i := range es {
			body, err := marshalEntry(es[i])
			if err != nil {
				t.Skip("not storable: ", err) // the store refuses it before projecting
			}
			e, err := decodeEntry(es[i].Seq, body)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
			p := projectOf(&es[i])
			if p.err != nil {
				t.Fatal(p.err)
			}
			add.fields = append(add.fields, p.p.fields...)
			add.text = append(add.text, p.p.text...)
			for j := range n {
				n[j] += p.n[j]
			}
		}
		chunk, err := appendChunk(nil, add, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeChunk(chunk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range got {
				t.Logf("%d: time %v message %v compaction %v; %#v %#v", i, reflect.DeepEqual(got[i].Time, want[i].Time),
					reflect.DeepEqual(got[i].Message, want[i].Message), reflect.DeepEqual(got[i].Compaction, want[i].Compaction), got[i].Time, want[i].Time)
			}
			t.Fatalf("chunk decodes to\n%+v\nJSON to\n%+v", got, want)
		}
		// Any prefix, and the raw bytes as a chunk, are refused or decode: no panic.
		for i := range len(chunk) {
			decodeChunk(chunk[:i], nil)
		}
		decodeChunk(append([]byte(chunkMagic+"\x00\x00\x00\x00"), raw...), nil)
		decodeChunk(fixCRC(append([]byte(chunkMagic+"\x00\x00\x00\x00"), raw...)), nil)
	})
}
