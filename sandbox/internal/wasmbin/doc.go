// Package wasmbin reads WebAssembly binary modules (Reader: the strict LEB128
// decoding the sandbox's module inspection and MergeData share) and rewrites
// one part of them, the data section, so that instantiating a module costs
// less without changing what it does (MergeData).
//
// It also does the binary half of pre-initialisation: ParseReactor checks that
// a reactor's whole state after _initialize is its one memory and its mutable
// globals (decoding every function body to find instructions that change
// tables or segments), Instrument exports those globals to be read, and
// Snapshot writes the module that starts in the state read. Running
// _initialize is the sandbox's (preinit.go).
//
// Go's linker splits a program's initialised data into tens of thousands of
// active data segments (37,436 for the calc example), leaving out runs of
// zeros between them. wazero evaluates the offset expression of every
// segment each time it instantiates the module, which made about a fifth of
// the CPU time of a busy server whose sessions each get a fresh instance.
// Merging neighbouring segments, with the few zero bytes between them
// written out, gives the same initial memory from a few hundred segments.
//
// What it must not do: change a module's behaviour (a snapshot behaves as
// the module after _initialize; ParseReactor refuses what it cannot prove
// that for), run code (the sandbox runs _initialize), or validate modules
// (the compiler does; a module these readers cannot read is the compiler's
// to refuse). MergeData rewrites only a data
// section whose every segment is active, in memory 0, at an i32.const
// offset, in ascending order without overlap, in a module without a data
// count section (the one a module needs to name data segments from code,
// with memory.init or data.drop, whose indices a merge would change).
// Anything else, including a malformed module, is returned unchanged for
// the compiler to accept or refuse as it is.
package wasmbin
