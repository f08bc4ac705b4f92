//go:build wasip1

package filter

// decodeFallback decodes what the fast event decoder gave up on (a key it
// does not know, from a newer host, or an unusual shape): with the
// reflection decoder of decodeConfig, unknown keys skipped as
// encoding/json skips them. encoding/json itself is left out of WASM
// builds (see decodeConfig).
func decodeFallback(raw []byte, v any) error { return decodeReflect(raw, v, true) }
