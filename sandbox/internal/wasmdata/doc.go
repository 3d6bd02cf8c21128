// Package wasmdata rewrites the data section of a WebAssembly binary module
// so that instantiating it costs less, without changing what it does.
//
// Go's linker splits a program's initialised data into tens of thousands of
// active data segments (37,436 for the calc example), leaving out runs of
// zeros between them. wazero evaluates the offset expression of every
// segment each time it instantiates the module, which made about a fifth of
// the CPU time of a busy server whose sessions each get a fresh instance.
// Merging neighbouring segments, with the few zero bytes between them
// written out, gives the same initial memory from a few hundred segments.
//
// What it must not do: change a module's behaviour. It rewrites only a data
// section whose every segment is active, in memory 0, at an i32.const
// offset, in ascending order without overlap, in a module without a data
// count section (the one a module needs to name data segments from code,
// with memory.init or data.drop, whose indices a merge would change).
// Anything else, including a malformed module, is returned unchanged for
// the compiler to accept or refuse as it is.
package wasmdata
