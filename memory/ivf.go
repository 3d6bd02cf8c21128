package memory

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// The vector index both stores keep (an inverted-file index, IVF): a scope's vectors are
// split into lists by k-means, each list has a centroid, and a search scores the
// centroids, then only the vectors of the nearest lists, exactly. The stores keep the
// centroids and each memory's list in SQL (store/memoryindex.go, store/postgres); this
// file is the arithmetic, the same for both.
const (
	// IndexFrom is the number of vectors a scope needs before it is indexed: below it, a
	// search reads them all (a few milliseconds), which is exact.
	IndexFrom = 2000
	// trainIters is k-means' rounds over its sample: the lists only need to be coherent,
	// not optimal; more rounds move recall by less than a probe more does.
	trainIters = 8
	// SamplePerList bounds the training sample (k-means costs sample × lists × dims a round).
	SamplePerList = 32
)

// IVF is one scope's trained index: Lists centroids of Dims each, unit length, row-major.
type IVF struct {
	Dims      int
	Centroids []float32
}

// Lists is the number of lists for n vectors: about √n, so a list holds about √n vectors
// and a search of a few lists reads a small multiple of √n.
func Lists(n int) int {
	return max(1, int(math.Sqrt(float64(n))))
}

// Probes is how many lists a search of an index of k lists reads: six, and more (k/64)
// past 384 lists (147,456 vectors), so a search reads about 6·√n vectors up to there.
// On the fixed set of store/memoryrecall_test.go recall@5 is the same from four probes
// to nineteen; what it misses is a query near no topic of the user's, whose nearest
// memories are spread over every list (docs/memory.md).
func Probes(k int) int {
	return min(k, max(6, k/64))
}

// Len is the number of lists.
func (x IVF) Len() int {
	if x.Dims == 0 {
		return 0
	}
	return len(x.Centroids) / x.Dims
}

// TrainIVF clusters vectors (all of Dims dimensions) into k lists by spherical k-means
// (cosine), from a seeded sample so the same vectors give the same index.
func TrainIVF(vectors [][]float32, k int, seed uint64) IVF {
	if len(vectors) == 0 || k <= 0 {
		return IVF{}
	}
	d := len(vectors[0])
	rng := rand.New(rand.NewPCG(seed, 0x1f))
	sample := make([][]float32, 0, min(len(vectors), k*SamplePerList))
	for _, i := range rng.Perm(len(vectors))[:cap(sample)] {
		if len(vectors[i]) == d {
			sample = append(sample, unit(vectors[i]))
		}
	}
	if len(sample) == 0 {
		return IVF{}
	}
	k = min(k, len(sample))
	c := make([]float32, k*d)
	for j, i := range rng.Perm(len(sample))[:k] {
		copy(c[j*d:], sample[i])
	}
	x := IVF{Dims: d, Centroids: c}
	sums := make([]float64, k*d)
	counts := make([]int, k)
	for range trainIters {
		clear(sums)
		clear(counts)
		for _, v := range sample {
			j := x.Assign(v)
			counts[j]++
			for i, f := range v {
				sums[j*d+i] += float64(f)
			}
		}
		for j := range k {
			if counts[j] == 0 { // an empty list starts again from a random vector
				copy(c[j*d:(j+1)*d], sample[rng.IntN(len(sample))])
				continue
			}
			var n float64
			for _, s := range sums[j*d : (j+1)*d] {
				n += s * s
			}
			n = math.Sqrt(n)
			for i := range d {
				c[j*d+i] = float32(sums[j*d+i] / n)
			}
		}
	}
	return x
}

// unit is v scaled to length 1 (a copy; zeros stay zeros).
func unit(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	s := 1 / math.Sqrt(n)
	for i, f := range v {
		out[i] = float32(float64(f) * s)
	}
	return out
}

// Assign is the list of v: the centroid of highest dot product (the centroids have unit
// length, so the highest cosine). v must have Dims dimensions.
func (x IVF) Assign(v []float32) int {
	best, at := float32(math.Inf(-1)), 0
	for j := range x.Len() {
		if s := dot(x.Centroids[j*x.Dims:(j+1)*x.Dims], v); s > best {
			best, at = s, j
		}
	}
	return at
}

// Nearest is the n lists whose centroids are nearest v, nearest first; none when v has
// another length than the index's vectors.
func (x IVF) Nearest(v []float32, n int) []int {
	if len(v) != x.Dims || x.Dims == 0 {
		return nil
	}
	type scored struct {
		list  int
		score float32
	}
	all := make([]scored, x.Len())
	for j := range all {
		all[j] = scored{j, dot(x.Centroids[j*x.Dims:(j+1)*x.Dims], v)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.list - b.list
	})
	out := make([]int, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.list)
	}
	return out
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// EncodeIVF is the centroids as the stores keep them: little-endian float32s.
func EncodeIVF(x IVF) []byte {
	b := make([]byte, 4*len(x.Centroids))
	for i, f := range x.Centroids {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeIVF reads EncodeIVF's form of an index of dims-dimensional centroids.
func DecodeIVF(b []byte, dims int) (IVF, error) {
	if dims <= 0 || dims > MaxDimension || len(b) == 0 || len(b)%(4*dims) != 0 {
		return IVF{}, errors.New("stored vector index is corrupt")
	}
	c := make([]float32, len(b)/4)
	for i := range c {
		c[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return IVF{Dims: dims, Centroids: c}, nil
}
