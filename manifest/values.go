package manifest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Size is a byte count written as "32MiB", "512 KiB", "1GB" or a plain integer.
type Size uint64

// UnmarshalText implements encoding.TextUnmarshaler.
// A size written as 0 is refused: leaving the key out is how to ask for the default.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("invalid size %q: must be more than 0 (leave the key out for the default)", string(b))
	}
	*s = Size(v)
	return nil
}

// MarshalText writes the size as a manifest would: "32MiB", "1536KiB", "100B".
func (s Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		name  string
		bytes uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s >= Size(u.bytes) && uint64(s)%u.bytes == 0 {
			return []byte(fmt.Sprintf("%d%s", uint64(s)/u.bytes, u.name)), nil
		}
	}
	return []byte(fmt.Sprintf("%dB", uint64(s))), nil
}

// MaxSize is the largest size a manifest may give: sizes become int64 byte counts.
const MaxSize = math.MaxInt64

// ParseSize parses a size with an optional unit: B, KB/KiB, MB/MiB, GB/GiB (KB = 1000).
// A size that overflows (more than MaxSize bytes) is an error, never a wrapped value.
func ParseSize(in string) (uint64, error) {
	t := strings.TrimSpace(in)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a number with a unit such as 32MiB", in)
	}
	units := map[string]uint64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30}
	mult, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (B, KB, KiB, MB, MiB, GB, GiB)", in, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil || n > MaxSize/mult {
		return 0, fmt.Errorf("invalid size %q: too large (at most %d bytes)", in, uint64(MaxSize))
	}
	return n * mult, nil
}

// Duration is a time.Duration written as "2s", "500ms", "1m30s".
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: want e.g. 2s, 500ms or 30d", string(b))
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: negative", string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as a manifest would: "2s", "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Schema is a JSON Schema given as a TOML table or as a string holding JSON.
type Schema json.RawMessage

// UnmarshalTOML implements toml.Unmarshaler.
func (s *Schema) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		if !json.Valid([]byte(x)) {
			return fmt.Errorf("input_schema is a string but not JSON: %q", x)
		}
		*s = Schema(x)
	case map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("input_schema: %w", err)
		}
		*s = Schema(b)
	default:
		return fmt.Errorf("input_schema must be a table or a JSON string, not %T", v)
	}
	return nil
}

// parseDuration is time.ParseDuration plus whole days ("30d"), the unit retention
// periods are written in.
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 106751 { // time.Duration's range
			return 0, fmt.Errorf("invalid number of days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
