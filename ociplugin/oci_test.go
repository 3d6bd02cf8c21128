package ociplugin

import (
	"net/http"
	"strings"
	"testing"
)

// Plain HTTP only to loopback: a registry elsewhere is reached over HTTPS whatever the
// reference says, and a reference that is not oci:// is refused.
func TestRefsUseHTTPOnlyOnLoopback(t *testing.T) {
	for ref, scheme := range map[string]string{
		"oci://127.0.0.1:5000/p/calc:1": "http", "oci://localhost:5000/p/calc:1": "http", "oci://[::1]:5000/p/calc:1": "http",
		"oci://ghcr.io/p/calc:1": "https",
	} {
		r, err := ParseRef(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if got := r.Context().Registry.Scheme(); got != scheme {
			t.Errorf("%s: scheme %s, want %s", ref, got, scheme)
		}
	}
	for _, bad := range []string{"https://ghcr.io/p/calc:1", "oci://", "oci://ghcr.io/P/Calc:1"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	// The library itself speaks HTTP to private-range registries: the transport refuses
	// such a request before anything is sent (the request is handed to it directly here,
	// so no address but loopback is ever contacted by the test).
	req, _ := http.NewRequest("GET", "http://10.0.0.1:5000/v2/", nil)
	if _, err := (httpsOnly{}).RoundTrip(req); err == nil || !strings.Contains(err.Error(), "plain HTTP to 10.0.0.1:5000 refused") {
		t.Errorf("plain HTTP to a private-range registry: %v", err)
	}
	if _, err := Push([]byte("not wasm"), "oci://127.0.0.1:1/p/x:1", ""); err == nil || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Errorf("push of a non-module: %v", err)
	}
}

// Keyless verification is linked by the programs that import ociplugin/keyless (the
// agenthost binary does); in one that did not (this test binary), a keyless policy is
// refused with what to import, before the registry is asked anything.
func TestAKeylessPolicyWithoutItsVerifierLinkedSaysWhatToImport(t *testing.T) {
	k := &Keyless{Identity: "release@example.com", Issuer: "https://issuer.example.com", TrustedRoot: "trusted_root.json"}
	_, err := PullWith("oci://127.0.0.1:1/p/x:1", PullOptions{Keyless: k})
	const want = "keyless verification is not linked into this program (import github.com/agenthost/agenthost/ociplugin/keyless)"
	if err == nil || err.Error() != want {
		t.Fatalf("PullWith = %v, want %q", err, want)
	}
	// An invalid policy is still named for what it lacks, linked or not.
	_, err = PullWith("oci://127.0.0.1:1/p/x:1", PullOptions{Keyless: &Keyless{Issuer: "https://issuer.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "needs identity") {
		t.Fatalf("PullWith = %v", err)
	}
}
