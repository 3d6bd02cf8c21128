// Package ociplugin fetches Wasm plugins from OCI registries (wasm = "oci://…" in
// agent.toml) and checks their signatures, through github.com/google/go-containerregistry.
//
// An artifact is one image whose single layer is the module, media type
// application/vnd.module.wasm.content.layer.v1+wasm (what Spin and Wassette push), or a
// built JavaScript bundle, application/vnd.agenthost.js.bundle.v1+javascript (js =
// "oci://…"; it must open with JSBundleHeader), each cached under its own extension. A
// signature is cosign's key-based form: an image tagged sha256-<manifest digest>.sig whose
// layer is the "simple signing" payload naming the manifest digest, with the ECDSA P-256
// signature of that payload in the layer's dev.cosignproject.cosign/signature annotation.
// Verification is offline against a public key file (PEM). Keyless signatures are
// Sigstore bundles stored as OCI referrers of the artifact's manifest (cosign 3's layout),
// for a certificate identity and OIDC issuer (a Keyless policy, policy.go); they are
// verified by ociplugin/keyless (and the program it starts, agenthost-sigstore:
// github.com/sigstore/sigstore-go against a trusted root read from a file), which
// registers itself (RegisterKeyless), so that this package,
// and manifest that pulls with it, link no Sigstore code. A Lock is the
// agent.lock file beside a manifest: what each reference resolved to, which PullWith can
// be made to check (Check) before anything is fetched.
//
// What it must not do: load or run a module (the sandbox does, after the host checks the
// module against the digest this package resolved), contact a registry over plain HTTP
// unless it is on a loopback address, read more than MaxModule bytes of a layer, or fetch a
// trusted root (TUF) or anything else from Sigstore's services: the trusted root is a file.
package ociplugin
