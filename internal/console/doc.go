// Package console is the web console of `nexus serve --console ADDR`: a
// page where a security team watches and steers the gateway. It serves
// server-rendered HTML (html/template, embedded with the stylesheet and
// one small script: it works without internet access) on a listener of
// its own, never on the MCP endpoint:
//
//   - the overview: one section per replica, each server (status, era,
//     transport, tools, its last error with the fix the CLI would print)
//     and each agent (sessions, tool calls in the last minute). With a
//     session store the replicas share, each console (or Report, on a
//     replica without one) reports its replica's status there with a
//     TTL, refreshed, and each console shows every live replica's; one
//     that stops drops off (replicas.go);
//   - the live decisions, over server-sent events, from the engine's
//     decision feed (audit.Feed): the very records the audit log gets, so
//     arguments are shown only as the log holds them; each opens its
//     explain trace, the chain's steps as `nexus explain` lists them, and
//     for a refused or failed call the report its record keeps (headline
//     and fixes: the command line's report, diag.JSON);
//   - the sessions, and ending a legacy one (audited, with who and why);
//     beside them the calls that wait for their agents' input (MRTR, the
//     gateway's bridge), and ending one (audited the same way);
//   - the lockfile's drift (lockfile.go): each definition it withholds as
//     a diff against its pin, with its tool-poisoning findings, which an
//     admin accepts or rejects (audited first, with who and why) through
//     the Lockfile interface; the host writes the file as nexus lock does
//     and enforces it at once, and the other replicas follow the file.
//
// Access: a token from the console block (config.RegisterBlock; see
// Options), compared in constant time; admin and read-only tokens are
// separate roles. Or single sign-on (oidc.go): OpenID Connect at the
// gateway's OAuth issuer (the SSO interface, *gateway.Login, which checks
// ID tokens as the gateway checks agents' access tokens), a role claim
// mapping to admin or read-only, and no role for anyone else. The login is a random id in a cookie that is HttpOnly,
// SameSite=Strict and Secure (relaxed only on a plain-HTTP loopback
// console, where a browser would not send it back otherwise); every
// change is a POST with the login's CSRF token and the console's own
// Origin. Neither pages, answers nor log lines show a token.
//
// Untrusted text (server and agent names, reasons, arguments) is
// escaped by html/template and made inert (inert.go): control and bidi
// characters are shown as their codes, long text is cut.
//
// A live page never holds up a call: the feed gives each page a bounded
// buffer, and a page that falls behind loses decisions (counted, and
// shown on the page) instead of queueing them; the page itself draws at
// most once per frame and drops what it has not drawn rather than
// growing.
//
// The console depends on the engine (registry, audit) and the gateway,
// never on host: host's Gateway (the one importer) hands it the engine
// and the gateway through the Servers and Sessions interfaces.
//
// Its browser tests drive a real Chromium with chromedp: a pure-Go CDP
// client (no Node, no driver binary beside the browser), maintained, whose
// actions wait on the DOM, so a test waits for what it needs to see
// rather than for a time.
package console
