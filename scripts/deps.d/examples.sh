# plugins/examples/: toolchains for the non-Go example plugins.
#   C: clang + lld + wasi-libc (+ the wasm32 compiler-rt builtins)
#   Rust: Debian's rustc 1.63 with the wasm32-wasi standard library (no cargo, no crates.io)
#   WAT: wabt's wat2wasm
#   AssemblyScript: node + npm, then `npm ci` from the committed lockfile
apt_install clang lld wasi-libc libclang-rt-dev-wasm32 rustc libstd-rust-dev-wasm32 wabt
# Node only when missing: a machine may have Node from NodeSource, whose nodejs package
# bundles npm; asking apt for Debian's npm there pulls in a conflicting Node and fails.
command -v node >/dev/null || apt_install nodejs
command -v npm >/dev/null || apt_install npm
if [ ! -x plugins/examples/assemblyscript/node_modules/.bin/asc ]; then
  (cd plugins/examples/assemblyscript && npm ci --no-audit --no-fund --loglevel=error)
fi
