package seal

import "time"

// SetReloadGap sets the least time between two reloads an unknown key causes.
func SetReloadGap(k *Keys, d time.Duration) { k.src.gap = d }

// Reads is how many times the key file was read again.
func Reads(k *Keys) int64 { return k.src.reads.Load() }
