package providers

// SetAfterVerify installs a hook run between the verification of a pinned adapter and
// its start, and returns the function that removes it.
func SetAfterVerify(f func(original string)) (restore func()) {
	afterVerify = f
	return func() { afterVerify = nil }
}

// SetMaxMessageSize lowers this process's side of the connection's message limit (the
// adapter keeps MaxMessageSize) and returns the function that restores it.
func SetMaxMessageSize(n int) (restore func()) {
	maxMessageSize = n
	return func() { maxMessageSize = MaxMessageSize }
}
