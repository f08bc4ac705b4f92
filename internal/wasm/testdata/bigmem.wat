;; A filter whose memory starts at 64 MiB, over the default 32 MiB limit.
(module
  (memory (export "memory") 1024)
  (func (export "nexus_filter_abi_v1"))
  (func (export "nx_abi_minor") (result i32) (i32.const 0))
  (func (export "nx_input_buf") (param i32) (result i32) (i32.const 1024))
  (func (export "nx_configure") (param i32 i32) (result i32) (i32.const 0))
  (func (export "nx_on_event") (param i32 i32) (result i64) (i64.const 0))
)
