# bench/: what `make bench` needs beyond the main module. The C-built plugin of the start
# row is compiled with clang + wasi-libc (examples.sh installs the same; listed here so
# bench does not depend on that part), and bench/eino is a module of its own whose
# dependencies (cloudwego/eino, sonic) `go mod download` at the root does not fetch.
apt_install clang lld wasi-libc libclang-rt-dev-wasm32
(cd bench/eino && go mod download)
