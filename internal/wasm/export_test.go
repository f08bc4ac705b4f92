package wasm

// TarGz makes an OPA-style bundle (a gzipped tar) of files, for the
// package's external tests.
var TarGz = bundleOf

// Yields reports whether f's module runs with the host's own loop checks
// (interrupt.go) rather than wazero's.
func Yields(f *Filter) bool { return f.mod.interrupt }
