# sandbox/: the hostile-plugin tests assemble WebAssembly text with wabt's wat2wasm.
apt_install wabt
