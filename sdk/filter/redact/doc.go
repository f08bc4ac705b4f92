// Package redact finds secrets in text and replaces them with
// [REDACTED:<kind>]: AWS access keys, GitHub and Slack tokens, Slack
// webhooks, private key blocks, JWTs, sk- API keys, key=value secrets
// ("password=hunter3", "Authorization: Bearer ..."), values under secret
// key names (nested ones too, judged by their own key), and with Entropy
// long random-looking tokens.
//
// It is the one implementation of these detectors: the redact-secrets
// filter runs it on results inside WASM, and the host's audit log on the
// arguments it records. So it imports nothing but the standard library,
// uses no regular expressions (slow in WASM), and finds candidates in one
// pass over a string with a table of the byte pairs a secret can begin at.
package redact
