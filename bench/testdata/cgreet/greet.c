// greet: the C-built plugin of `make bench` (plugin start row). Extism ABI, no PDK: the
// five kernel functions it needs are declared here. Same export and answer as the Go-built
// sandbox/testdata/guest: greet("x") = "Hello, x!". Built as a WASI reactor with
// wasi-libc, the way a C plugin author would (see bench/fixtures_test.go).
#include <stdint.h>

#define EXTISM(name) __attribute__((import_module("extism:host/env"), import_name(name)))
EXTISM("input_length") uint64_t extism_input_length(void);
EXTISM("input_load_u8") uint8_t extism_input_load_u8(uint64_t offset);
EXTISM("alloc") uint64_t extism_alloc(uint64_t n);
EXTISM("store_u8") void extism_store_u8(uint64_t offset, uint8_t b);
EXTISM("output_set") void extism_output_set(uint64_t offset, uint64_t n);

__attribute__((export_name("greet"))) int32_t greet(void) {
  static const char pre[] = "Hello, ";
  uint64_t n = extism_input_length();
  uint64_t p = sizeof pre - 1;
  uint64_t out = extism_alloc(p + n + 1);
  for (uint64_t i = 0; i < p; i++) extism_store_u8(out + i, (uint8_t)pre[i]);
  for (uint64_t i = 0; i < n; i++) extism_store_u8(out + p + i, extism_input_load_u8(i));
  extism_store_u8(out + p + n, '!');
  extism_output_set(out, p + n + 1);
  return 0;
}
