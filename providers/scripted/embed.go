package scripted

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/agenthost/agenthost/providers"
)

// Dimensions is the length of the scripted model's vectors.
const Dimensions = 64

var _ providers.Embedder = (*Model)(nil)

func (m *Model) setNoEmbed(off bool) { m.mu.Lock(); m.noEmbed = off; m.mu.Unlock() }

func (m *Model) embedOff() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.noEmbed }

// Embed returns deterministic vectors for tests (providers.Embedder): each word (letters
// and digits, lower-cased) adds ±1 to a dimension chosen by its hash, and the vector is
// normalised. Texts sharing words are near, texts sharing none are orthogonal or close to
// it, the same text always gives the same vector, and nothing is fetched or learned.
// The fixture's synonyms are taken as the word they name.
// With embeddings = "off" it fails as an adapter without embeddings does.
func (m *Model) Embed(_ context.Context, _ string, inputs []string) ([][]float32, *providers.Usage, error) {
	if m.embedOff() {
		return nil, nil, &providers.Error{Kind: providers.KindInvalidRequest, Message: "scripted: embeddings are off"}
	}
	m.mu.Lock()
	var synonyms map[string]string
	if m.fixture != nil {
		synonyms = m.fixture.Synonyms
	}
	m.mu.Unlock()
	out := make([][]float32, len(inputs))
	words := 0
	for i, text := range inputs {
		v := make([]float32, Dimensions)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
			if s, ok := synonyms[w]; ok {
				w = s
			}
			h := fnv.New64a()
			h.Write([]byte(w))
			sum := h.Sum64()
			if sum&(1<<63) != 0 {
				v[sum%Dimensions]--
			} else {
				v[sum%Dimensions]++
			}
			words++
		}
		var n float64
		for _, f := range v {
			n += float64(f) * float64(f)
		}
		if n > 0 {
			for j := range v {
				v[j] = float32(float64(v[j]) / math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, &providers.Usage{PromptTokens: int64(words), TotalTokens: int64(words)}, nil
}
