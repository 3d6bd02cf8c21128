package providers

// SetAfterVerify installs a hook run between the verification of a pinned adapter and
// its start, and returns the function that removes it.
func SetAfterVerify(f func(original string)) (restore func()) {
	afterVerify = f
	return func() { afterVerify = nil }
}
