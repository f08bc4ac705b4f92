;; A filter that misbehaves on purpose, for the runtime's tests. Its config
;; is a JSON string whose first letter picks what nx_on_event does:
;;   (none) allow          L loop forever         M grow memory until refused, then trap
;;   T trap (unreachable)  J answer non-JSON      A answer an unknown action
;;   O answer out of bounds                       B claim an answer over 10 MiB
;;   S write 5 MiB to stdout, then allow          E report an error
;;   D deny with a reason  Z modify without params
;;   G log at every level, then allow            C refuse the config (in nx_configure)
;; Compile with: wat2wasm misbehave.wat -o misbehave.wasm
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "nexus" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 4)
  (global $mode (mut i32) (i32.const 0))
  (data (i32.const 16) "{\"action\":\"allow\"}")            ;; 18
  (data (i32.const 48) "hello, not json")                     ;; 15
  (data (i32.const 64) "{\"action\":\"maybe\"}")            ;; 18
  (data (i32.const 96) "{\"error\":\"database unreachable\"}") ;; 32
  (data (i32.const 160) "{\"action\":\"deny\",\"reason\":\"no\"}") ;; 31
  (data (i32.const 208) "{\"action\":\"modify\"}")          ;; 19
  (data (i32.const 240) "bad config: mode C")                 ;; 18
  (data (i32.const 272) "a trace")                            ;; 7
  (data (i32.const 288) "an error")                           ;; 8
  (func (export "nexus_filter_abi_v1"))
  (func (export "nx_abi_minor") (result i32) (i32.const 0))
  (func (export "nx_input_buf") (param $n i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $n) (i32.const 65536))
      (then (i32.const 0))
      (else (i32.const 65536))))
  (func (export "nx_configure") (param $p i32) (param $n i32) (result i32)
    (if (i32.and (i32.ge_u (local.get $n) (i32.const 2))
                 (i32.eq (i32.load8_u (local.get $p)) (i32.const 34)))
      (then (global.set $mode (i32.load8_u (i32.add (local.get $p) (i32.const 1))))))
    (if (i32.eq (global.get $mode) (i32.const 67)) ;; C
      (then
        (call $log (i32.const 4) (i32.const 240) (i32.const 18))
        (return (i32.const 1))))
    (i32.const 0))
  (func $answer (param $p i32) (param $n i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32))
            (i64.extend_i32_u (local.get $n))))
  (func (export "nx_on_event") (param i32 i32) (result i64)
    (local $m i32) (local $i i32)
    (local.set $m (global.get $mode))
    (if (i32.eq (local.get $m) (i32.const 76)) ;; L
      (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $m) (i32.const 77)) ;; M
      (then (loop $grow
        (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1)) (then unreachable))
        (br $grow))))
    (if (i32.eq (local.get $m) (i32.const 84)) (then unreachable)) ;; T
    (if (i32.eq (local.get $m) (i32.const 74)) (then (return (call $answer (i32.const 48) (i32.const 15))))) ;; J
    (if (i32.eq (local.get $m) (i32.const 65)) (then (return (call $answer (i32.const 64) (i32.const 18))))) ;; A
    (if (i32.eq (local.get $m) (i32.const 79)) (then (return (call $answer (i32.const 0xfffffff0) (i32.const 100))))) ;; O
    (if (i32.eq (local.get $m) (i32.const 66)) (then (return (call $answer (i32.const 16) (i32.const 11534336))))) ;; B
    (if (i32.eq (local.get $m) (i32.const 69)) (then (return (call $answer (i32.const 96) (i32.const 32))))) ;; E
    (if (i32.eq (local.get $m) (i32.const 68)) (then (return (call $answer (i32.const 160) (i32.const 31))))) ;; D
    (if (i32.eq (local.get $m) (i32.const 90)) (then (return (call $answer (i32.const 208) (i32.const 19))))) ;; Z
    (if (i32.eq (local.get $m) (i32.const 71)) ;; G
      (then
        (call $log (i32.const 0) (i32.const 272) (i32.const 7))
        (call $log (i32.const 4) (i32.const 288) (i32.const 8))))
    (if (i32.eq (local.get $m) (i32.const 83)) ;; S: 80 writes of 64 KiB of 'x' from the third page
      (then
        (memory.fill (i32.const 131072) (i32.const 120) (i32.const 65536))
        (i32.store (i32.const 1024) (i32.const 131072)) ;; iovec: buf
        (i32.store (i32.const 1028) (i32.const 65536))  ;; iovec: len
        (loop $write
          (drop (call $fd_write (i32.const 1) (i32.const 1024) (i32.const 1) (i32.const 1040)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $write (i32.lt_u (local.get $i) (i32.const 80))))))
    (call $answer (i32.const 16) (i32.const 18)))
)
