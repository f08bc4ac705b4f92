package explain

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// oauth is the report on an OAuth failure (internal/auth's *Error): title,
// the problem in one sentence, evidence, likely causes and a fix, by kind.
func oauth(e *auth.Error) *diag.Report {
	dc := e.Diag
	r := &diag.Report{
		Title:  "OAuth Authorization Failed",
		Server: e.Server,
		Source: dc.Source,
		URL:    dc.URL,
		Cause:  e,
	}
	where := ""
	if e.URL != "" {
		where = " (" + e.URL + ")"
	}
	status := ""
	if e.Status != 0 {
		status = "HTTP " + strconv.Itoa(e.Status)
	}
	oauthErr := ""
	if e.OAuthError != "" {
		oauthErr = e.OAuthError
		if e.Description != "" {
			oauthErr += ": " + e.Description
		}
	}
	login := "nexus auth login " + or(e.Server, "SERVER")
	inFile := ""
	if dc.Source.File != "" {
		inFile = " in " + dc.Source.File
	}
	switch e.Kind {
	case auth.ErrConfig:
		r.Title = "OAuth Configuration Error"
		r.Problem = e.Op
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
		r.Fix = []string{"Check this server's \"oauth\" settings" + inFile}
		if errors.Is(e.Err, auth.ErrUnknownGrant) {
			r.Fix = []string{`Use "authorization_code", "client_credentials", "enterprise" or "jwt_bearer" as this server's grant` + inFile}
		}
		if errors.Is(e.Err, auth.ErrUserInfo) {
			r.Fix = []string{"Remove the user name and password from this server's url" + inFile + ": with an oauth block the token authenticates",
				"Or, for a server that takes basic authentication, remove the oauth block and keep them in the url (never printed)"}
		}
	case auth.ErrInsecureURL:
		r.Problem = "Refusing to use " + e.URL + " for " + e.Op + ": OAuth endpoints must use HTTPS (plain http is only allowed on localhost)"
		r.Causes = []string{
			"The server or its authorization server is misconfigured",
			"The metadata was tampered with to send credentials over an unencrypted connection",
		}
		r.Fix = []string{"Use the https:// URL of the server, or ask its operator to serve the authorization endpoints over HTTPS"}
	case auth.ErrDiscovery:
		r.Problem = "Could not " + e.Op + where
		r.Causes = []string{
			"The server does not support OAuth (it may expect a static token in a header instead)",
			"The server's metadata endpoints are missing or broken",
		}
		r.Fix = []string{
			"Check that the server URL is right: " + or(dc.URL, "its \"url\""+inFile),
			"Configure the endpoints by hand in this server's \"oauth\" block (auth_url, token_url, client_id)" + inFile,
		}
	case auth.ErrResourceMismatch:
		r.Problem = "The Protected Resource Metadata" + where + " is for another resource: " + e.Description
		r.Causes = []string{
			"The server publishes the metadata of a different server (a misconfigured proxy or tenant)",
			"A malicious server tries to obtain tokens meant for another service",
		}
		r.Fix = []string{
			"Check that the configured URL is the server's exact MCP endpoint",
			"Do not log in until the server's operator fixes the \"resource\" in its metadata",
		}
	case auth.ErrIssuerMismatch:
		r.Problem = "The authorization server metadata" + where + " names a different issuer: " + e.Description
		r.Causes = []string{
			"The authorization server is misconfigured (its issuer setting does not match its URL)",
			"The server's Protected Resource Metadata names the issuer in another form (the two must be identical: a trailing slash or a different case counts)",
			"The metadata was served by a party impersonating the authorization server",
		}
		r.Fix = []string{"Ask the server's operator to make authorization_servers in its Protected Resource Metadata and the issuer in the authorization server's metadata identical"}
	case auth.ErrIssuerChanged:
		r.Problem = "The client credentials of this server belong to another authorization server: " + e.Description + "; they were not sent"
		r.Causes = []string{
			"The server's Protected Resource Metadata now names a different authorization server (a migration)",
			"The metadata was tampered with to collect credentials meant for another authorization server",
		}
		r.Fix = []string{
			"If the move is intended, register Nexus at the new authorization server and put its client_id (and client_secret) in this server's \"oauth\" block" + inFile + ", with issuer set to the new issuer, then: " + login,
			"Otherwise ask the server's operator why its authorization server changed",
		}
	case auth.ErrDPoP:
		r.Problem = "DPoP (proof-of-possession tokens, RFC 9449) failed" + where + ": " + or(e.Description, e.Op)
		r.Causes = []string{
			"The server accepts only DPoP-bound tokens and the configuration or the authorization server rules them out",
			"The server rejects the client's proofs (a clock far off, or a nonce it keeps changing)",
		}
		r.Fix = []string{
			"Set dpop = \"auto\" (the default) or \"on\" in this server's oauth block" + inFile,
			"Check the system clock, then ask the server's operator which DPoP algorithms and nonces it expects",
		}
	case auth.ErrNoPKCE:
		r.Problem = "The authorization server" + where + " does not support PKCE with S256 (code_challenge_methods_supported: " + or(e.Description, "absent") + ")"
		r.Causes = []string{"The authorization server is too old or misconfigured for MCP, which requires PKCE S256"}
		r.Fix = []string{
			"Ask the server's operator to enable PKCE (S256) and advertise it in the metadata",
			"For machine-to-machine access, a client-credentials grant does not need PKCE",
		}
	case auth.ErrNoClientIdentity:
		r.Problem = "The authorization server" + where + " offers no way for Nexus to identify itself: no pre-registered client_id is configured, it does not accept Client ID Metadata Documents, and it has no registration endpoint"
		r.Causes = []string{"The server expects clients to be registered by hand"}
		r.Fix = []string{
			"Register an OAuth client with the server's provider and add it to this server's entry" + inFile + ":\n\"oauth\": {\"client_id\": \"...\", \"client_secret\": \"${env:CLIENT_SECRET}\"}",
		}
	case auth.ErrRegistration:
		r.Problem = "Dynamic Client Registration at " + or(e.URL, "the registration endpoint") + " failed"
		if status != "" {
			r.Problem += ": " + status
		}
		if oauthErr != "" {
			r.Problem += " (" + oauthErr + ")"
		}
		r.Causes = []string{
			"The authorization server restricts registration (an allowlist, an initial access token, or it is disabled)",
			"It rejected the redirect URI or another piece of client metadata (Nexus registers application_type \"native\" with a loopback redirect URI, which OpenID Connect servers must accept for native clients)",
		}
		r.Fix = []string{"Register a client by hand and configure its client_id (and client_secret)" + inFile}
	case auth.ErrStateMismatch:
		r.Problem = "The authorization response did not match the request (" + or(e.Description, "state mismatch") + "); it was discarded"
		r.Causes = []string{
			"A stale browser tab from an earlier login completed instead of the current one",
			"Another program sent a forged response to the redirect listener (a CSRF attempt)",
		}
		r.Fix = []string{"Close old login tabs and log in again: " + login}
	case auth.ErrIssMismatch:
		r.Problem = "The authorization response did not come from the authorization server the login was started at (" + e.Description + "); it was discarded and its code not redeemed"
		r.Causes = []string{
			"Several authorization servers are in use and a response from another one reached this login (a mix-up attack, RFC 9207)",
			"The authorization server's issuer setting differs from the issuer in its metadata (even a trailing slash counts)",
		}
		r.Fix = []string{
			"Close old login tabs and log in again: " + login,
			"If it persists, ask the server's operator to make the iss it sends identical to the issuer in its metadata",
		}
	case auth.ErrAuthorizationDenied:
		r.Problem = "The authorization server refused the authorization request"
		if oauthErr != "" {
			r.Problem += ": " + oauthErr
		}
		r.Causes = []string{
			"The login was cancelled or consent was denied in the browser",
			"The request was invalid for this authorization server (scope, redirect URI or client)",
		}
		r.Fix = []string{"Log in again and approve the request: " + login}
	case auth.ErrRedirectTimeout:
		r.Problem = "Nobody completed the login in the browser in time; the redirect listener at " + or(e.URL, "localhost") + " gave up"
		r.Causes = []string{
			"The browser did not open (no display, or no browser installed)",
			"The login page was left unfinished",
		}
		r.Fix = []string{
			"Run " + login + " and open the printed URL by hand",
			"On a machine without a browser, use a client-credentials grant or a pre-obtained token",
		}
	case auth.ErrTokenEndpoint:
		r.Problem = "The token endpoint " + or(e.URL, "") + " failed the " + or(e.Op, "token request")
		if status != "" {
			r.Problem += ": " + status
		}
		if oauthErr != "" {
			r.Problem += " (" + oauthErr + ")"
		}
		switch {
		case e.Op == auth.OpWorkloadGrant && e.Status < 500 && e.OAuthError != "":
			r.Causes = []string{
				"The workload JWT expired, or its aud is not this authorization server's issuer (invalid_grant)",
				"The authorization server does not trust the JWT's issuer or subject for this client, or not for the scopes asked (unauthorized_client, invalid_scope)",
			}
			r.Fix = []string{
				"Check the JWT in assertion or assertion_file" + inFile + ": its aud, exp, iss and sub",
				"Ask the authorization server's operator to trust this workload (its issuer and subject) for the scopes it needs",
			}
		case e.Status >= 500:
			r.Causes = []string{"The authorization server failed while handling the request (a bug or an outage)"}
			r.Fix = []string{"Try again later; if it persists, contact the server's operator"}
		case e.OAuthError == "invalid_client" || e.Status == 401:
			r.Causes = []string{
				"The client_id or client_secret (or signing key) is wrong or was revoked",
				"The client authentication method does not match the registration",
			}
			r.Fix = []string{"Check client_id and client_secret" + inFile + ", then: " + login}
		case e.OAuthError == "invalid_grant":
			r.Causes = []string{"The authorization code, refresh token or assertion expired, was used already, or was revoked"}
			r.Fix = []string{"Log in again: " + login}
		case e.Status == 0 && e.Err != nil:
			r.Causes = []string{"The authorization server could not be reached or sent a response that is not a token"}
			r.Fix = []string{"Check the network and the token endpoint URL"}
		default:
			r.Causes = []string{"The authorization server rejected the request"}
			r.Fix = []string{"The response body above usually says why"}
		}
	case auth.ErrUnauthorized:
		r.Problem = "The server kept answering 401 Unauthorized after " + e.Description + "; giving up"
		r.Causes = []string{
			"The server does not accept tokens from this authorization server (a wrong audience or resource)",
			"The server's token validation is broken",
		}
		r.Fix = []string{
			"Log out and in again: nexus auth logout " + or(e.Server, "SERVER") + " && " + login,
			"Ask the server's operator to check which tokens it accepts",
		}
	case auth.ErrInsufficientScope:
		r.Problem = "The server kept answering 403 insufficient_scope after step-up authorization (" + e.Description + "); giving up"
		r.Causes = []string{
			"The account is not allowed the scopes the server asks for",
			"The authorization server grants fewer scopes than requested",
		}
		r.Fix = []string{"Check the account's permissions with the server's provider"}
	default:
		r.Problem = e.Error()
	}
	if e.Body != "" {
		r.Details = append(r.Details, diag.Section{Heading: "Response body (start)", Lines: strings.Split(e.Body, "\n")})
	}
	if e.Err != nil && e.Kind != auth.ErrConfig {
		r.Details = append(r.Details, diag.Section{Heading: "Error", Lines: []string{e.Detail()}})
	}
	return r
}

// or is s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
