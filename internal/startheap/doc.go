// Package startheap lets a process's first garbage collection wait until its heap has
// grown to a starting size (16 MiB) instead of the runtime's 4 MiB minimum, and then
// hands the collector back its usual setting.
//
// Why: agenthost's package initialisation allocates about 5 MB (issue 53: 42,000
// allocations, most of them a JSON Schema library compiling its meta-schemas), so
// every process start paid a collection in the middle of init — about 2 ms of the
// start's ~13 ms — for a heap that is mostly still live. A short command (`--help`, a
// hook, `plugins call`) now never collects; a long one (`serve`) collects first at
// 16 MiB, then as GOGC says. The Go compiler does the same for its own start.
//
// It must not override the user's choice: with GOGC set in the environment it does
// nothing, and a GOMEMLIMIT still bounds the heap (the runtime collects at the limit
// whatever the percentage). It must import nothing but os and the runtime's packages, so
// that it initialises before the packages whose allocations it is for (the linker runs
// an init once its imports' have run); a command imports it for its side effect.
package startheap
