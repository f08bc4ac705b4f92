package wasm

// TarGz makes an OPA-style bundle (a gzipped tar) of files, for the
// package's external tests.
var TarGz = bundleOf
