package memory_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// TestCosineUnitEncodedIsCosineUnitBitForBit: scoring with the query encoded (what the
// SQLite store computes inside the database) gives exactly CosineUnit's score, so a
// search ranks and scores the same either way; odd lengths, mismatched lengths, zero and
// non-finite vectors included.
func TestCosineUnitEncodedIsCosineUnitBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, dims := range []int{1, 2, 3, 7, 64, 384, 385} {
		for range 50 {
			v, q := make([]float32, dims), make([]float32, dims)
			for i := range v {
				v[i], q[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			u := memory.Unit(q)
			b := memory.EncodeVector(v)
			got, want := memory.CosineUnitEncoded(b, memory.EncodeVector(u)), memory.CosineUnit(b, u)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%d dims: CosineUnitEncoded %v, CosineUnit %v", dims, got, want)
			}
		}
	}
	u := memory.EncodeVector(memory.Unit([]float32{1, 2, 3}))
	for name, b := range map[string][]byte{
		"shorter":   memory.EncodeVector([]float32{1, 2}),
		"longer":    memory.EncodeVector([]float32{1, 2, 3, 4}),
		"empty":     nil,
		"zero":      memory.EncodeVector([]float32{0, 0, 0}),
		"not 4n":    []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
		"infinite":  memory.EncodeVector([]float32{float32(math.Inf(1)), 1, 1}),
		"not a num": memory.EncodeVector([]float32{float32(math.NaN()), 1, 1}),
	} {
		if got := memory.CosineUnitEncoded(b, u); got != 0 {
			t.Errorf("%s: %v, want 0", name, got)
		}
	}
}
