package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
)

// Prefix starts every sealed value (inside its JSON quotes).
const Prefix = "ahe1:"

// ErrLocked is returned when a sealed value is met without a key ring.
var ErrLocked = errors.New("the store is encrypted: set [store] key_file or AGENTHOST_STORE_KEY")

// ErrUnknownKey is returned for a value sealed under a key id the ring does not hold.
var ErrUnknownKey = errors.New("sealed with a key the ring does not hold")

type key struct {
	id    string
	aead  cipher.AEAD
	index []byte // the blind index's HMAC key
}

// Keys is a key ring: the first key seals, every key opens. A nil *Keys seals nothing
// and opens only values that are not sealed. A ring read from a file (Load) can be read
// again while in use (Reload, reload.go): every copy of it (Strict) sees the new keys.
type Keys struct {
	src    *source
	strict bool
}

// ring is one reading of a key ring: immutable once built.
type ring struct {
	keys  []key
	byID  map[string]*key
	stamp fileStamp // the key file as it was read (Watch compares it)
}

// Strict is the ring refusing values that are not sealed: for a store every value of
// which is sealed, where a plain value can only have been written by someone without the
// key (a downgrade), never by agenthost.
func (k *Keys) Strict() *Keys {
	if k == nil {
		return nil
	}
	c := *k
	c.strict = true
	return &c
}

// ErrNotSealed is a plain value met by a strict ring.
var ErrNotSealed = errors.New("value is not sealed, in a store whose values all are: written without the key")

// Parse reads a ring: entries "ID:BASE64KEY" separated by newlines or commas, the
// current key first; blank lines and lines starting with # are skipped. A key is 32
// bytes (AES-256); an id is 1–32 letters, digits, '-' or '_'.
func Parse(text string) (*Keys, error) {
	r, err := parseRing(text)
	if err != nil {
		return nil, err
	}
	return newKeys(r, ""), nil
}

func parseRing(text string) (*ring, error) {
	k := &ring{byID: map[string]*key{}}
	seen := map[string]bool{}
	for n, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("key %d: want ID:BASE64KEY", n+1)
		}
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("key %d: %w", n+1, err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("key %q: not base64: %w", id, err)
		}
		if len(raw) != 32 {
			return nil, fmt.Errorf("key %q: %d bytes, want 32 (AES-256)", id, len(raw))
		}
		if seen[id] {
			return nil, fmt.Errorf("key %q: listed twice", id)
		}
		seen[id] = true
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		idx, err := hkdf.Key(sha256.New, raw, nil, "agenthost memory index", 32)
		if err != nil {
			return nil, err
		}
		k.keys = append(k.keys, key{id: id, aead: aead, index: idx})
	}
	if len(k.keys) == 0 {
		return nil, errors.New("no key")
	}
	for i := range k.keys {
		k.byID[k.keys[i].id] = &k.keys[i]
	}
	return k, nil
}

// Load reads a ring from a file, which must not be readable by group or others. The ring
// remembers the path: Reload reads it again.
func Load(path string) (*Keys, error) {
	r, err := loadRing(path)
	if err != nil {
		return nil, err
	}
	return newKeys(r, path), nil
}

// maxKeyFile bounds a key file: a ring is a few lines.
const maxKeyFile = 64 << 10

// loadRing reads and parses a key file. The mode and size checked are those of the file
// read (one open, then fstat), so a symlink swapped between the check and the read
// cannot slip another file past the check.
func loadRing(path string) (*ring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: more than %d bytes is not a key file", path, maxKeyFile)
	}
	r, err := parseRing(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.stamp = fileStamp{fi: fi, mod: fi.ModTime(), sz: fi.Size()}
	return r, nil
}

func checkID(id string) error {
	if id == "" || len(id) > 32 {
		return fmt.Errorf("key id %q: 1 to 32 characters", id)
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return fmt.Errorf("key id %q: letters, digits, - and _ only", id)
		}
	}
	return nil
}

// NewKey makes a key line for a ring: "kYYYYMMDD-XXXX:BASE64".
func NewKey() (string, error) {
	var b [32]byte
	var tag [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	_, _ = rand.Read(tag[:])
	return "k" + time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(tag[:]) + ":" + base64.StdEncoding.EncodeToString(b[:]), nil
}

// Current is the id of the key that seals; "" for a nil ring.
func (k *Keys) Current() string {
	if k == nil {
		return ""
	}
	return k.ring().keys[0].id
}

// Seal encrypts plain for the row aad names. A nil ring returns plain.
func (k *Keys) Seal(plain, aad []byte) []byte {
	if k == nil {
		return plain
	}
	cur := &k.ring().keys[0]
	nonce := make([]byte, cur.aead.NonceSize(), cur.aead.NonceSize()+len(plain)+cur.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	ct := cur.aead.Seal(nonce, nonce, plain, aad)
	out := make([]byte, 0, len(Prefix)+len(cur.id)+base64.RawStdEncoding.EncodedLen(len(ct))+4)
	out = append(out, '"')
	out = append(out, Prefix...)
	out = append(out, cur.id...)
	out = append(out, ':')
	out = base64.RawStdEncoding.AppendEncode(out, ct)
	return append(out, '"')
}

// Sealed reports whether b is a sealed value, and under which key id.
func Sealed(b []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`"`+Prefix))
	if !ok {
		return "", false
	}
	id, _, ok := bytes.Cut(rest, []byte(":"))
	return string(id), ok
}

// Open decrypts a sealed value for the row aad names; a value that is not sealed is
// returned as it is.
func (k *Keys) Open(b, aad []byte) ([]byte, error) {
	id, ok := Sealed(b)
	if !ok {
		if k != nil && k.strict {
			return nil, ErrNotSealed
		}
		return b, nil
	}
	if k == nil {
		return nil, ErrLocked
	}
	kk, err := k.find(id)
	if err != nil {
		return nil, err
	}
	body := b[len(Prefix)+len(id)+2:]
	if len(body) == 0 || body[len(body)-1] != '"' {
		return nil, errors.New("sealed value is truncated")
	}
	ct, err := base64.RawStdEncoding.DecodeString(string(body[:len(body)-1]))
	if err != nil || len(ct) < kk.aead.NonceSize()+kk.aead.Overhead() {
		return nil, errors.New("sealed value is corrupt")
	}
	plain, err := kk.aead.Open(nil, ct[:kk.aead.NonceSize()], ct[kk.aead.NonceSize():], aad)
	if err != nil {
		return nil, errors.New("sealed value does not open: corrupt, or moved from another row")
	}
	return plain, nil
}

// IndexText is what an encrypted store indexes for a memory's text: each word (as
// memory.Terms splits and folds words, repeats kept so ranking still counts them) as a
// keyed hash under the current key.
func (k *Keys) IndexText(words []string) string {
	cur := &k.ring().keys[0]
	var sb strings.Builder
	for i, w := range words {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(blind(cur.index, w))
	}
	return sb.String()
}

// IndexQuery hashes a search's terms under every key of the ring, so memories indexed
// before a rotation are found until rotate-key re-indexes them.
func (k *Keys) IndexQuery(terms []string) []string {
	r := k.ring()
	out := make([]string, 0, len(terms)*len(r.keys))
	for _, kk := range r.keys {
		for _, t := range terms {
			out = append(out, blind(kk.index, t))
		}
	}
	return out
}

func blind(key []byte, word string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(word))
	return "h" + hex.EncodeToString(m.Sum(nil)[:12])
}
