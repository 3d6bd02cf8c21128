package seal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A ring read from a key file is read again, while the process runs, when:
//   - the operator asks (Reload: `serve` does on SIGHUP),
//   - the file changes (Watch: `serve` polls it),
//   - a value is sealed under a key id the ring does not hold (another process, such as
//     `store rotate-key`, sealed it with a key added to the file since): the ring is read
//     once more before the value is refused, by one caller at a time and at most once per
//     reloadGap, so a value under a key that truly is gone does not make every read a
//     file read.
//
// A reading that fails (the file removed, replaced by garbage, readable by others, a
// symlink swapped to something that is not a key file) changes nothing: the ring in use
// stays, and the error is reported (Reload's result, Watch's log, the error of the value
// that could not be opened).

// reloadGap is the least time between two reloads that values under one unknown key id
// cause. It is per key id: a rotation's new key is looked for at once even if the last
// rotation's was looked for a moment ago (rotations can follow each other quickly), while
// a value under an id the file keeps not holding reads the file once a gap, not once a
// value.
const reloadGap = time.Second

// maxMissed bounds the unknown key ids remembered for reloadGap.
const maxMissed = 64

// source is what every copy of a ring shares: the keys in use and where they came from.
type source struct {
	cur  atomic.Pointer[ring]
	path string // "" : the ring was not read from a file (AGENTHOST_STORE_KEY) and is fixed

	mu      sync.Mutex           // one reload at a time
	missed  map[string]time.Time // key ids a reload did not find, and when (at most maxMissed)
	lastErr error                // what that reload (or an operator's) answered, nil if it succeeded
	gap     time.Duration
	reads   atomic.Int64 // key file readings after the first (tests)
}

func newKeys(r *ring, path string) *Keys {
	src := &source{path: path, gap: reloadGap}
	src.cur.Store(r)
	return &Keys{src: src}
}

func (k *Keys) ring() *ring { return k.src.cur.Load() }

// Path is the key file the ring was read from; "" when it came from elsewhere.
func (k *Keys) Path() string {
	if k == nil {
		return ""
	}
	return k.src.path
}

// IDs lists the ring's key ids, the sealing one first.
func (k *Keys) IDs() []string {
	if k == nil {
		return nil
	}
	r := k.ring()
	ids := make([]string, len(r.keys))
	for i := range r.keys {
		ids[i] = r.keys[i].id
	}
	return ids
}

// ErrFixedRing is Reload on a ring that was not read from a file.
var ErrFixedRing = errors.New("the key ring was not read from a file (AGENTHOST_STORE_KEY): restart to change it")

// Reload reads the key file again and, if it reads as a ring, uses it from now on (every
// copy of this ring does). On an error the ring in use is kept.
func (k *Keys) Reload() error {
	if k == nil || k.src.path == "" {
		return ErrFixedRing
	}
	k.src.mu.Lock()
	defer k.src.mu.Unlock()
	return k.src.reload()
}

// reload reads the file; the caller holds mu.
func (s *source) reload() error {
	s.reads.Add(1)
	r, err := loadRing(s.path)
	s.lastErr = err
	if err != nil {
		return err
	}
	s.cur.Store(r)
	return nil
}

// find is the key id names, reading the key file once more (single-flight, at most once
// per gap) when the ring in use does not hold it.
func (k *Keys) find(id string) (*key, error) {
	if kk := k.ring().byID[id]; kk != nil {
		return kk, nil
	}
	s := k.src
	if s.path == "" {
		return nil, fmt.Errorf("key %q: %w", id, ErrUnknownKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kk := s.cur.Load().byID[id]; kk != nil {
		return kk, nil // another caller's reload brought it
	}
	if t, seen := s.missed[id]; !seen || time.Since(t) >= s.gap {
		_ = s.reload() // kept in lastErr, said below
		if kk := s.cur.Load().byID[id]; kk != nil {
			delete(s.missed, id)
			return kk, nil
		}
		if s.missed == nil || len(s.missed) >= maxMissed {
			s.missed = map[string]time.Time{} // bounded: forgetting only costs a read
		}
		s.missed[id] = time.Now()
	}
	if s.lastErr != nil {
		return nil, fmt.Errorf("key %q: %w (reading %s again failed, the ring in use is kept: %v)", id, ErrUnknownKey, s.path, s.lastErr)
	}
	return nil, fmt.Errorf("key %q: %w (nor does %s)", id, ErrUnknownKey, s.path)
}

// fileStamp is what Watch compares to notice that the key file changed.
type fileStamp struct {
	fi      os.FileInfo
	mod     time.Time
	sz      int64
	missing bool // the file could not be stat'ed
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path) // follows a symlink: a swapped link is a change
	if err != nil {
		return fileStamp{missing: true}, err
	}
	return fileStamp{fi: fi, mod: fi.ModTime(), sz: fi.Size()}, nil
}

func (a fileStamp) same(b fileStamp) bool {
	return a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) && a.mod.Equal(b.mod) && a.sz == b.sz
}

// Watch reloads the ring when its key file changes (checked every interval) or when
// signal delivers, until ctx ends; say is told each reload's outcome. A ring not read
// from a file is not watched (signal is then answered with ErrFixedRing).
func (k *Keys) Watch(ctx context.Context, interval time.Duration, signal <-chan os.Signal, say func(format string, args ...any)) {
	if k == nil {
		return
	}
	var tick <-chan time.Time
	if k.src.path != "" {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var failed fileStamp // the file as it was when reading it last failed: not said again
	reload := func(why string, now fileStamp) {
		if err := k.Reload(); err != nil {
			failed = now
			say("store keys (%s): %v; keeping the ring in use (sealing with %s)", why, err, k.Current())
			return
		}
		say("store keys (%s): read %s: %d key(s), sealing with %s", why, k.src.path, len(k.IDs()), k.Current())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-signal:
			now, _ := stampOf(k.src.path)
			reload("signal", now)
		case <-tick:
			now, err := stampOf(k.src.path)
			if now.same(k.ring().stamp) || now.same(failed) || err != nil && failed.missing {
				continue
			}
			reload("the key file changed", now)
		}
	}
}
