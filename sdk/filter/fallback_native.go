//go:build !wasip1

package filter

import "encoding/json"

// decodeFallback decodes what the fast event decoder gave up on. A native
// build decodes any JSON a person hands the harness, so it asks
// encoding/json; a WASM build uses the smaller decoder of decodeConfig.
func decodeFallback(raw []byte, v any) error { return json.Unmarshal(raw, v) }
