package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files in dir, and
// returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir, name string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	parsed, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// serve --tls-cert/--tls-key serves HTTPS: a client trusting the certificate runs a run
// with the token; plain HTTP to the port and a client that does not trust it get
// nothing; a key that is not the certificate's, or half a pair, is a usage error before
// anything listens. mcp serve --http takes the same pair. A plain-HTTP bind beyond
// loopback says the token crosses the network in clear.
func TestE2E_ServeOverTLSWithAGeneratedCertificate(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "Over TLS."}]}`})
	cert, key, pool := selfSigned(t, e.dir, "server")
	tokenFile := filepath.Join(e.dir, "token")
	os.WriteFile(tokenFile, []byte("s3cret-token-for-tls\n"), 0o600)
	s := e.serve(t, "--tls-cert", cert, "--tls-key", key, "--token-file", tokenFile)
	if !strings.HasPrefix(s.base, "https://127.0.0.1:") {
		t.Fatalf("serving on %s, want https", s.base)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("POST", s.base+"/v1/runs", strings.NewReader(`{"threadId":"t1","runId":"r1","messages":[{"id":"m","role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer s3cret-token-for-tls")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"Over TLS."`) {
		t.Fatalf("run over TLS: %d %s", resp.StatusCode, body)
	}
	if _, err := http.Get(s.base + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that does not trust the certificate: %v", err)
	}
	plain, err := http.Get("http://" + strings.TrimPrefix(s.base, "https://") + "/healthz")
	if err == nil {
		b, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		if plain.StatusCode != 400 || !strings.Contains(string(b), "HTTPS") {
			t.Fatalf("plain HTTP to the TLS port: %d %s", plain.StatusCode, b)
		}
	}

	_, otherKey, _ := selfSigned(t, e.dir, "other")
	for _, args := range [][]string{{"--tls-cert", cert, "--tls-key", otherKey}, {"--tls-cert", cert}, {"--tls-key", key}} {
		r := e.agenthost(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		if r.code != 2 || !(strings.Contains(r.stderr, "private key does not match public key") || strings.Contains(r.stderr, "go together")) {
			t.Fatalf("serve %v: exit %d %s", args, r.code, r.stderr)
		}
	}

	m := e.serveArgs(t, "mcp", "serve", "--http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(m.base, "https://127.0.0.1:") {
		t.Fatalf("mcp serve on %s, want https", m.base)
	}
	wide := e.serveArgs(t, "serve", "--addr", "0.0.0.0:0", "--token-file", tokenFile)
	if !strings.Contains(wide.log(), "warning: serving plain HTTP on 0.0.0.0:0: the token and the sessions cross the network in clear") {
		t.Fatalf("no warning for plain HTTP beyond loopback:\n%s", wide.log())
	}
}
