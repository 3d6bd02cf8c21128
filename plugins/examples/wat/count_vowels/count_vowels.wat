;; count_vowels — an example WASI command tool written by hand in WebAssembly text
;; (wasi ABI): reads the tool arguments {"text": "..."} from stdin and prints how
;; many ASCII vowels (a e i o u, either case) the text holds, e.g. "3".
;; It counts from the first ':' to the end of the input, so it is meant for the
;; one-field object its schema allows; JSON escapes are not decoded ("\u00e9"
;; counts its "e"). Exit 2 (an error result) when the input has no ':'.
;;
;;   wat2wasm count_vowels.wat -o count_vowels.wasm
(module
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 2)
  ;; 0..8: iovec {ptr,len}; 8: nread/nwritten; 16..48: number text;
  ;; 64: error message; 1024..: input buffer (grows with the memory)
  (data (i32.const 64) "count_vowels: input is not a JSON object\n")

  (func $is_vowel (param $c i32) (result i32)
    (local.set $c (i32.or (local.get $c) (i32.const 0x20))) ;; lower-case letters
    (i32.or
      (i32.or (i32.eq (local.get $c) (i32.const 97)) (i32.eq (local.get $c) (i32.const 101)))
      (i32.or (i32.or (i32.eq (local.get $c) (i32.const 105)) (i32.eq (local.get $c) (i32.const 111)))
              (i32.eq (local.get $c) (i32.const 117)))))

  (func (export "_start")
    (local $len i32) (local $n i32) (local $i i32) (local $count i32) (local $seen i32) (local $p i32)
    ;; read stdin to the end at 1024, growing memory by a page when the buffer is full
    (local.set $len (i32.const 0))
    (block $eof
      (loop $read
        (if (i32.gt_u (i32.add (i32.add (i32.const 1024) (local.get $len)) (i32.const 4096))
                      (i32.mul (memory.size) (i32.const 65536)))
          (then (drop (memory.grow (i32.const 1)))))
        (i32.store (i32.const 0) (i32.add (i32.const 1024) (local.get $len)))
        (i32.store (i32.const 4) (i32.const 4096))
        (br_if $eof (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
        (local.set $n (i32.load (i32.const 8)))
        (br_if $eof (i32.eqz (local.get $n)))
        (local.set $len (i32.add (local.get $len) (local.get $n)))
        (br $read)))
    ;; count vowels after the first ':'
    (local.set $i (i32.const 0))
    (block $done
      (loop $scan
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $p (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
        (if (local.get $seen)
          (then (if (call $is_vowel (local.get $p))
                  (then (local.set $count (i32.add (local.get $count) (i32.const 1))))))
          (else (if (i32.eq (local.get $p) (i32.const 58)) (then (local.set $seen (i32.const 1))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (if (i32.eqz (local.get $seen))
      (then
        (i32.store (i32.const 0) (i32.const 64))
        (i32.store (i32.const 4) (i32.const 41))
        (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
        (call $proc_exit (i32.const 2))))
    ;; format the count right to left into 16..47, then a newline at 47
    (i32.store8 (i32.const 47) (i32.const 10))
    (local.set $p (i32.const 47))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $count) (i32.const 10))))
      (local.set $count (i32.div_u (local.get $count) (i32.const 10)))
      (br_if $digit (local.get $count)))
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (i32.sub (i32.const 48) (local.get $p)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
