// Package auth is the OAuth 2.1 client of Nexus for MCP servers reached over
// HTTP, per the MCP authorization specification (revisions 2025-11-25 and
// 2026-07-28) and its extensions.
//
// A transport uses it through the Authorizer interface and knows nothing of
// OAuth: Authorize adds the bearer token to each request, Challenge reacts
// to a 401 or 403 and says whether to retry. Behind them, a *Client does the
// MCP-specific work:
//
//   - Discovery: Protected Resource Metadata (RFC 9728) from the challenge's
//     resource_metadata, else the path-aware then root well-known location;
//     a document whose resource is not the server is refused. Then the
//     authorization server's metadata via RFC 8414 and OpenID Connect
//     discovery, with the path-insertion variants in the spec's order; a
//     document whose issuer is not exactly the one asked for is refused. A
//     server without Protected Resource Metadata gets the 2025-03-26 rules:
//     metadata at the server's root, then /authorize, /token, /register.
//   - Client identity, in the spec's priority: the pre-registered client of
//     the config; a Client ID Metadata Document (a URL as client_id) when
//     the authorization server supports them; Dynamic Client Registration
//     (RFC 7591) with the application_type its redirect URI calls for
//     (SEP-837), remembered per issuer.
//   - Credentials are bound to the authorization server that issued them
//     (SEP-2352): registrations are keyed by issuer, every client carries
//     its issuer and clientAuth refuses to present it anywhere else, a
//     server whose authorization server changes has its old token dropped
//     and registers anew, and a pre-registered client is used only with
//     its issuer (Config.Issuer, else the first it was used with).
//   - Grants: authorization code with PKCE S256 (an authorization server
//     whose metadata lacks S256 is refused), state and the RFC 9207 iss
//     checked before anything in the response is used (a present iss must
//     equal the recorded issuer as a plain string; an absent one is
//     refused where the metadata promised it), a loopback redirect listener, the RFC 8707 resource on every
//     authorization and token request; refresh before expiry; the
//     client-credentials grant with a secret or private_key_jwt (SEP-1046);
//     enterprise-managed authorization (SEP-990): RFC 8693 token exchange at
//     the IdP for an ID-JAG, then the RFC 7523 JWT bearer grant; workload
//     identity (SEP-1933): the workload's own JWT as that grant.
//   - DPoP (RFC 9449, dpop.go): when the server requires it (or the dpop
//     option says "on"), one ES256 key per credential, proofs on token
//     requests and on every request to the server, use_dpop_nonce retried
//     with the server's nonce at both.
//   - Scopes: the challenge's scope, else the configured scopes, else the
//     resource's scopes_supported, else none; offline_access only where the
//     authorization server lists it (SEP-2207); step-up on 403
//     insufficient_scope, bounded.
//   - Tokens are stored per server URL in ~/.nexus/tokens, one 0600 file
//     each, written atomically (format version 2; version 1 files migrate
//     on load), a DPoP token with its key. Tokens and secrets are never
//     logged.
//
// A config's oauth block is this package's Options (options.go): its
// OptionTable is what the config loader decodes, validates and writes back
// in every format, and Options.Apply fills a Config from it.
//
// golang.org/x/oauth2 does the mechanics (PKCE, the code exchange, token
// requests and their client authentication); github.com/golang-jwt/jwt/v5
// signs private_key_jwt assertions.
//
// Errors are *Error values, with the facts internal/explain builds their
// report from (what failed, where, likely causes, a fix); errors.Is matches
// them against the Err* kinds.
package auth
