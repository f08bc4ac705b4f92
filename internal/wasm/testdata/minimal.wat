;; The smallest Nexus filter: ABI v1 by hand, allowing everything. It is
;; the guest of the per-call overhead benchmark (no Go runtime, no JSON).
;; Compile with: wat2wasm minimal.wat -o minimal.wasm
(module
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"action\":\"allow\"}")
  (func (export "nexus_filter_abi_v1"))
  (func (export "nx_abi_minor") (result i32) (i32.const 0))
  ;; One input buffer, from the second page on: the memory grows until
  ;; the input fits (0 when it cannot, which fails the call).
  (func (export "nx_input_buf") (param $n i32) (result i32)
    (local $more i32)
    (local.set $more
      (i32.sub
        (i32.shr_u (i32.add (local.get $n) (i32.const 131071)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $more) (i32.const 0))
      (then
        (if (i32.eq (memory.grow (local.get $more)) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))
  (func (export "nx_configure") (param i32 i32) (result i32) (i32.const 0))
  ;; The decision at 16, 18 bytes long: (16 << 32) | 18.
  (func (export "nx_on_event") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 18)))
)
