;; hostile.wat: a hand-written Extism-ABI plugin whose exports misbehave on
;; purpose. The sandbox tests assemble it with wat2wasm; "echo" is the one
;; well-behaved export, used to prove that the plugin still works afterwards.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)

  ;; echo copies the input to the output.
  (func (export "echo") (result i32)
    (local $n i64) (local $i i64) (local $out i64)
    (local.set $n (call $input_length))
    (local.set $out (call $alloc (local.get $n)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8
          (i64.add (local.get $out) (local.get $i))
          (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $out) (local.get $n))
    (i32.const 0))

  ;; loop never ends.
  (func (export "loop") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))

  ;; recurse calls itself until the call stack overflows.
  (func $down (param i32) (result i32)
    (call $down (i32.add (local.get 0) (i32.const 1))))
  (func (export "recurse") (result i32)
    (call $down (i32.const 0)))

  ;; bomb grows its memory 1 MiB at a time and traps when a grow is refused.
  (func (export "bomb") (result i32)
    (loop $grow
      (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  ;; flood declares an 8 MiB output (the bytes are whatever alloc returned).
  (func (export "flood") (result i32)
    (call $output_set (call $alloc (i64.const 8388608)) (i64.const 8388608))
    (i32.const 0))

  ;; quit exits the module with the code 3.
  (func (export "quit") (result i32)
    (call $proc_exit (i32.const 3))
    (i32.const 0))

  ;; stain grows its memory to 1 MiB and fills all of it with 0xAA bytes: what
  ;; an instance leaves behind in its memory (a secret) when it is disposed of.
  (func $stain (export "stain") (result i32)
    (local $i i32)
    (drop (memory.grow (i32.const 15)))
    (block $done
      (loop $fill
        (br_if $done (i32.ge_u (local.get $i) (i32.const 1048576)))
        (i64.store (local.get $i) (i64.const -0x5555555555555556))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $fill)))
    (i32.const 0))

  ;; peek grows its memory to 1 MiB and outputs "0" if every byte of it is
  ;; zero, as a new instance's memory must be, else "1".
  (func (export "peek") (result i32)
    (local $i i32) (local $seen i64) (local $out i64)
    (drop (memory.grow (i32.const 15)))
    (block $done
      (loop $scan
        (br_if $done (i32.ge_u (local.get $i) (i32.const 1048576)))
        (local.set $seen (i64.or (local.get $seen) (i64.load (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $scan)))
    (local.set $out (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $out)
      (select (i32.const 49) (i32.const 48) (i64.ne (local.get $seen) (i64.const 0))))
    (call $output_set (local.get $out) (i64.const 1))
    (i32.const 0))

  ;; stain_and_hang stains its memory as stain does, then never returns: its
  ;; instance is stopped by the deadline while the guest is still running.
  (func (export "stain_and_hang") (result i32)
    (drop (call $stain))
    (loop $forever (br $forever))
    (i32.const 0)))
