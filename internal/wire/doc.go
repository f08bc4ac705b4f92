// Package wire is the one hand-written JSON scanner and string encoder of
// Nexus: a validating, non-allocating pass over JSON-RPC frames and the
// documents in them (ValidJSON, SkipValue, StringEnd, the member and
// element walkers), held to encoding/json's verdict by FuzzScanner, and
// AppendString, which writes a string as encoding/json does (less its HTML
// escaping), eight plain bytes at a time; AppendAny, the one encoder of
// values callers hand in as JSON (tool arguments), under that same rule;
// DecodeString (behind Unquote),
// which decodes a string as encoding/json does without reflection, held
// to it by FuzzDecodeString; and Scan over a ByteSet, the 64-bytes-a-jump
// search written for WASM guests. The host, the protocol and the Go guest
// SDK all use it: the guest's event decoder, string editor and config
// decoder read strings, numbers and raw values through it. Where the two
// builds want different code, each has its own file: runs of plain string
// bytes are found a word at a time natively (run_native.go) and by the
// table scan in WASM (run_wasm.go).
//
// encoding/json decodes through reflection and validates every message
// twice (once to check it, once to decode); the envelope of every frame,
// the content blocks of every tool result and resource read, the
// decisions of WASM filters
// and the ids of plugin frames go through here instead, in one pass.
// Values that need real decoding are handed to encoding/json as byte
// spans. It imports nothing of Nexus, so the protocol (host/mcp) and
// every part of the implementation can share it.
package wire
