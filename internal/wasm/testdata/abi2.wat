;; A filter built for a future ABI v2.
(module
  (memory (export "memory") 1)
  (func (export "nexus_filter_abi_v2"))
)
