;; The marker, but wrong or missing exports and imports: nx_on_event
;; returns i32, nx_input_buf is missing, memory is not exported, and it
;; imports a host function that does not exist and one from "env".
(module
  (import "nexus" "log" (func (param i32 i32)))
  (import "nexus" "nope" (func))
  (import "env" "abort" (func))
  (memory 1)
  (func (export "nexus_filter_abi_v1"))
  (func (export "nx_abi_minor") (result i32) (i32.const 0))
  (func (export "nx_configure") (param i32 i32) (result i32) (i32.const 0))
  (func (export "nx_on_event") (param i32 i32) (result i32) (i32.const 0))
)
