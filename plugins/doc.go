// Package plugins holds no code: it is the home of the plugin SDK (sdk/),
// the example plugins (examples/) and the tests that load every example
// through the sandbox exactly as the host does and assert its results.
//
// It must not grow runtime code: the host side lives in sandbox/ and host/,
// the guest side in sdk/.
package plugins
