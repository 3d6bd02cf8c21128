package memory

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// Cosine is the cosine similarity of a and b, 0 when their lengths differ or either is
// all zeros (a text without words).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// MaxDimension bounds a stored vector (the provider adapters' bound too).
const MaxDimension = 8192

// EncodeVector is a vector as the stores keep it: little-endian float32s.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads EncodeVector's form; nil for none.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%4 != 0 || len(b)/4 > MaxDimension {
		return nil, errors.New("stored vector is corrupt")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Nearest ranks entries by Cosine to v, best first, at most limit, leaving out those
// without a vector of v's length and those not similar at all (≤ 0).
func Nearest(entries []Entry, v []float32, limit int) []Hit {
	var hits []Hit
	for _, e := range entries {
		if s := Cosine(e.Vector, v); s > 0 {
			hits = append(hits, Hit{Entry: e, Score: s})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return b.Updated.Compare(a.Updated)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// rrfK is reciprocal rank fusion's constant: it damps the weight of the very first ranks,
// so one list's top hit does not drown the other's.
const rrfK = 60

// Fuse merges a word search's hits and a similarity search's into one ranking by
// reciprocal rank fusion (each list adds 1/(60+rank) to an entry's score), at most limit.
// Ranks, not scores, are fused: bm25, ts_rank and cosine are not on one scale.
func Fuse(words, similar []Hit, limit int) []Hit {
	score := map[string]float64{}
	byID := map[string]Hit{}
	for _, list := range [][]Hit{words, similar} {
		for rank, h := range list {
			score[h.ID] += 1 / float64(rrfK+rank+1)
			if _, ok := byID[h.ID]; !ok {
				byID[h.ID] = h
			}
		}
	}
	out := make([]Hit, 0, len(byID))
	for id, h := range byID {
		h.Score = score[id]
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return b.Created.Compare(a.Created)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Scored is an entry id with its similarity, for a search that ranks ids first and reads
// only the best entries whole.
type Scored struct {
	ID    string
	Score float64
}

// Best keeps the limit highest-scoring ids (score > 0), best first.
func Best(all []Scored, limit int) []Scored {
	out := all[:0]
	for _, s := range all {
		if s.Score > 0 {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out[:min(len(out), limit)]
}

// Unit is v scaled to length 1 (a copy; a zero vector stays zero): the query side of
// CosineUnit, computed once a search.
func Unit(v []float32) []float32 { return unit(v) }

// CosineUnit is Cosine of a vector in EncodeVector's form and u, a vector of length 1
// (Unit), read in place in one pass: what a similarity search computes for every vector
// it reads, so it neither allocates nor recomputes the query's length.
func CosineUnit(b []byte, u []float32) float64 {
	if len(b) != 4*len(u) || len(u) == 0 {
		return 0
	}
	b = b[:4*len(u)]
	var d0, d1, n0, n1 float32
	i := 0
	for ; i+2 <= len(u); i += 2 {
		x0 := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		x1 := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i+4:]))
		d0 += x0 * u[i]
		d1 += x1 * u[i+1]
		n0 += x0 * x0
		n1 += x1 * x1
	}
	for ; i < len(u); i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		d0 += x * u[i]
		n0 += x * x
	}
	dot, n := float64(d0+d1), float64(n0+n1)
	if n == 0 || math.IsNaN(dot) || math.IsInf(dot, 0) {
		return 0
	}
	return dot / math.Sqrt(n)
}

// CosineUnitEncoded is CosineUnit with u in EncodeVector's form too (ub), both read in
// place: what a store that scores vectors where it reads them (inside SQLite, without
// copying each vector out) computes. Same result as CosineUnit(b, u) for ub =
// EncodeVector(u), since the encoding keeps every float32 exactly.
func CosineUnitEncoded(b, ub []byte) float64 {
	if len(b) != len(ub) || len(b) == 0 || len(b)%4 != 0 {
		return 0
	}
	n := len(b) / 4
	b, ub = b[:4*n], ub[:4*n]
	var d0, d1, n0, n1 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		x0 := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		x1 := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i+4:]))
		u0 := math.Float32frombits(binary.LittleEndian.Uint32(ub[4*i:]))
		u1 := math.Float32frombits(binary.LittleEndian.Uint32(ub[4*i+4:]))
		d0 += x0 * u0
		d1 += x1 * u1
		n0 += x0 * x0
		n1 += x1 * x1
	}
	for ; i < n; i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		d0 += x * math.Float32frombits(binary.LittleEndian.Uint32(ub[4*i:]))
		n0 += x * x
	}
	dot, nn := float64(d0+d1), float64(n0+n1)
	if nn == 0 || math.IsNaN(dot) || math.IsInf(dot, 0) {
		return 0
	}
	return dot / math.Sqrt(nn)
}
