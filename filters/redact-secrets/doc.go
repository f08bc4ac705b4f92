// Command redact-secrets is a Nexus sanitizer filter: it replaces AWS
// access keys, GitHub and Slack tokens, private key blocks, JWTs, sk- API
// keys and key=value secrets (the detectors of sdk/filter/redact) with
// [REDACTED:<kind>] in the text content and the structuredContent of
// results. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o redact-secrets.wasm .
package main
