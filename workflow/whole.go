package workflow

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// A run whose steps' rows were never stored ends with its record stored whole, in its
// head's row: the usual end of a run on a store that keeps a run's note (notes.go),
// where every tool step's end waited in its call's run for the run's next write of its
// own, and the only one was the last. Stored as rows, that last write was the head and a
// row a step: on SQLite, a leaf of step rows (where the step rows' keys meet the heads',
// in the middle of the kv tree, so a leaf split with its neighbours most runs), the
// head's leaf and the interior pages above them, ~6 pages of the WAL a run of 8 steps.
// Whole, it is the head's leaf, the row the run's start wrote (BENCHMARKS.md, "Workflow
// step, round seven"). A run that stored a row (a fan-out, a step run again, a store
// that keeps no notes) goes on with rows: the rows it stored would go stale under a
// whole record.
//
// A record stored whole is the JSON of storedHead with the steps in "steps" and no
// step_rows, read as a record stored whole always was (loadStored; its next write, if
// it is resumed, moves its steps to rows). Past wholeCompressAt bytes it is compressed
// (DEFLATE after the byte wholeDeflated): SQLite keeps a value of more than ~1 KB of a
// WITHOUT ROWID table on overflow pages, a page each however little spills, and a
// record's steps (their times and statuses) compress ~4:1, so the record of a run of
// 8 steps (1.2 KB) is 320 bytes in its leaf. A value is JSON when it starts with '{'.

// wholeDeflated is the first byte of a compressed record (no JSON value starts with it).
const wholeDeflated = 0x01

// wholeCompressAt is the size from which a record stored whole is compressed: under it
// the record stays on its leaf as it is, readable with any SQLite tool.
const wholeCompressAt = 900

// maxWholeBytes bounds a compressed record's size once read (DEFLATE expands up to
// ~1,000 times): a value that claims more is not readable, whatever wrote it.
const maxWholeBytes = 64 << 20

var flaters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(io.Discard, flate.BestSpeed)
	if err != nil {
		panic(err) // only for a level out of range
	}
	return w
}}

// wholeValue is r stored whole: json.Marshal's bytes of storedHead{Record: *r} (the
// steps encoded as a run's rows are, appendStepValue), compressed past wholeCompressAt.
func wholeValue(r *Record) ([]byte, error) {
	h := storedHead{Record: *r}
	h.Steps = map[string]*StepRecord{}
	hb, err := json.Marshal(&h)
	if err != nil {
		return nil, err
	}
	// "steps" is the record's last field and step_rows and rows_at are empty: the steps
	// go in before the closing brace.
	const empty = `"steps":{}}`
	if !bytes.HasSuffix(hb, []byte(empty)) {
		return nil, fmt.Errorf("workflow %s run %s: the head does not end with its steps: %.40q", r.Workflow, r.RunID, hb[max(0, len(hb)-40):])
	}
	b := append(hb[:len(hb)-len(empty)], `"steps":{`...)
	for i, id := range slices.Sorted(maps.Keys(r.Steps)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, id), ':')
		if b, err = appendStepValue(b, r.Steps[id]); err != nil {
			return nil, err
		}
	}
	b = append(b, "}}"...)
	if len(b) < wholeCompressAt {
		return b, nil
	}
	var z bytes.Buffer
	z.Grow(len(b)/3 + 16)
	z.WriteByte(wholeDeflated)
	w := flaters.Get().(*flate.Writer)
	defer flaters.Put(w)
	w.Reset(&z)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// whole is recWriter.writes of an ended run that stored no step row: the record whole
// in its head's row, unless that is what is stored.
func (e *recWriter) whole(r *Record) ([]loop.KVWrite, func(), error) {
	b, err := wholeValue(r)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(b, e.headB) {
		return nil, func() {}, nil
	}
	return []loop.KVWrite{{Namespace: KVNamespace, Key: e.key, Value: b}}, func() { e.ids, e.headB, e.inl = nil, b, true }, nil
}

// headBytes is a stored head's JSON: b itself, or b's record uncompressed.
func headBytes(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != wholeDeflated {
		return b, nil
	}
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b[1:])), maxWholeBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("compressed record: %w", err)
	case len(out) > maxWholeBytes:
		return nil, errors.New("compressed record: more than 64 MiB once uncompressed")
	}
	return out, nil
}
