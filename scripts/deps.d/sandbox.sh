# sandbox/: the hostile-plugin tests assemble WebAssembly text with wabt's wat2wasm.
apt_install wabt
# The sleeping-guest tests build a C WASI command with clang + wasi-libc.
apt_install clang lld wasi-libc libclang-rt-dev-wasm32
