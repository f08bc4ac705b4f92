// Package resource is the gateway's side of OAuth 2.1 as a resource
// server: it decides which agent a JWT access token acts as, and publishes
// the gateway's Protected Resource Metadata (RFC 9728) so that MCP clients
// can find the authorization server to get such a token from.
//
// A Validator checks a token the way the MCP authorization specification
// asks a resource server to: the signature against the issuer's JSON Web
// Key Set (RSA, RSA-PSS, ECDSA and Ed25519 keys; never "none" or HMAC,
// whose "secret" would be the public key — the classic confusion attack),
// the issuer, the audience (the gateway's own resource URL, so a token
// issued for another server is refused), the expiry (required), not-before
// and issued-at with a leeway for clock skew, and the required scopes. A
// configured claim ("sub" by default, or an array claim such as "groups")
// then maps to an agent.
//
// Refusals are *Error values carrying the HTTP status (401 for a missing
// or bad token, 403 for a good token without access), the RFC 6750 error
// code, and a description for people that says what to fix; WWWAuthenticate
// renders the challenge that points clients at the metadata. Any other
// error from Agent means the token could not be judged (the issuer's keys
// could not be fetched): that is the gateway's problem, not the client's,
// and is best answered with 503.
//
// Everything that comes from outside is bounded. Tokens are at most 8 KiB.
// Each fetch (authorization server metadata, key set) is bounded by the
// caller's context and 10 seconds, and reads at most 1 MiB. The key set is
// cached for its Cache-Control max-age (clamped to 1 minute..24 hours,
// default 10 minutes); a token with an unknown key id makes the Validator
// fetch the set again at most once every 30 seconds, so a flood of made-up
// key ids cannot make the gateway hammer the issuer, and after a failed
// fetch no other is tried for 5 seconds. Concurrent validations share one
// fetch in flight; it is abandoned when every caller waiting for it has
// given up. While the issuer cannot be reached, keys from an expired set
// are still used.
//
// Fetches go through the Config's HTTPClient: the gateway passes one that
// goes through Nexus's SSRF guard.
package resource
