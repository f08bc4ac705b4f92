package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// redirectListenAddr is the host:port to listen on and the callback path
// for a configured loopback redirect URI.
func redirectListenAddr(redirectURI string) (addr, path string, err error) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" || !isLoopbackHost(u.Hostname()) {
		return "", "", errors.New("the redirect URI must be a loopback http URL such as http://127.0.0.1:8976/callback (Nexus receives the code itself)")
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		host = "127.0.0.1"
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return net.JoinHostPort(host, port), path, nil
}

// listen opens the redirect listener: on the configured redirect URI's
// port, else on the port of an earlier dynamic registration with the same
// issuer if it is free (so the registration stays valid), else on
// ListenAddr.
func (c *Client) listen(issuer string) (net.Listener, string, string, error) {
	if c.cfg.RedirectURI != "" {
		addr, path, _ := redirectListenAddr(c.cfg.RedirectURI)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", "", err
		}
		return ln, c.cfg.RedirectURI, path, nil
	}
	if prev := c.registeredRedirect(issuer); prev != "" {
		if addr, path, err := redirectListenAddr(prev); err == nil && path == callbackPath {
			if ln, err := net.Listen("tcp", addr); err == nil {
				return ln, prev, path, nil
			}
		}
	}
	ln, err := net.Listen("tcp", c.cfg.ListenAddr)
	if err != nil {
		return nil, "", "", err
	}
	return ln, "http://" + ln.Addr().String() + callbackPath, callbackPath, nil
}

// callbackResult is what the browser brought back to the listener.
type callbackResult struct {
	code, state, iss, errCode, errDesc string
}

// authorizeInteractive runs the authorization code grant with PKCE S256:
// it opens the redirect listener, identifies the client, shows the
// authorization URL (with state, code_challenge and the RFC 8707 resource)
// through the Opener, waits for the redirect, checks state (and iss), and
// exchanges the code with the code_verifier and resource.
func (c *Client) authorizeInteractive(ctx context.Context, d *discovered, scopes []string) (*storedToken, error) {
	as := d.as
	if err := c.checkPKCE(as); err != nil {
		return nil, err
	}
	if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
		return nil, c.failWith(&Error{Kind: ErrDiscovery, Op: "find the authorization and token endpoints", URL: as.URL,
			Err: errors.New("the authorization server metadata lacks authorization_endpoint or token_endpoint")})
	}
	for _, u := range []string{as.AuthorizationEndpoint, as.TokenEndpoint} {
		if err := checkSecureURL(u); err != nil {
			return nil, c.fail(ErrInsecureURL, "authorization", u, nil)
		}
	}
	ln, redirectURI, path, err := c.listen(as.Issuer)
	if err != nil {
		return nil, c.failWith(&Error{Kind: ErrConfig, Op: "open the redirect listener", Err: err})
	}
	results := make(chan callbackResult, 1)
	srv := &http.Server{
		Handler:           callbackHandler(path, results),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()

	ci, err := c.clientFor(ctx, as, redirectURI)
	if err != nil {
		return nil, err
	}
	key, err := c.dpopFor(d)
	if err != nil {
		return nil, err
	}
	state, err := randomString(32)
	if err != nil {
		return nil, err
	}
	verifier := oauth2.GenerateVerifier()
	style, secret, _, err := c.clientAuth(as, ci)
	if err != nil {
		return nil, c.failWith(&Error{Kind: ErrTokenEndpoint, Op: "authorization code exchange", URL: as.TokenEndpoint, Err: err})
	}
	oc := &oauth2.Config{
		ClientID:     ci.ClientID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint, AuthStyle: style},
		RedirectURL:  redirectURI,
		Scopes:       scopes,
	}
	authURL := oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	c.log.Debug("authorization request", "endpoint", as.AuthorizationEndpoint, "client", ci.Source, "scopes", strings.Join(scopes, " "), "redirect", redirectURI)

	// Wait for the person, not for the caller's per-request deadline;
	// an explicit cancellation still ends the wait.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RedirectTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()

	if err := c.opener(wctx, authURL); err != nil {
		return nil, c.failWith(&Error{Kind: ErrAuthorizationDenied, Op: "open the authorization URL", Err: err})
	}
	var res callbackResult
	select {
	case res = <-results:
	case <-wctx.Done():
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, c.failWith(&Error{Kind: ErrRedirectTimeout, Op: "wait for the authorization redirect", URL: redirectURI,
			Err: fmt.Errorf("no redirect within %s", c.cfg.RedirectTimeout)})
	}

	if subtle.ConstantTimeCompare([]byte(res.state), []byte(state)) != 1 {
		desc := "state mismatch"
		if res.state == "" {
			desc = "the response has no state"
		}
		return nil, c.failWith(&Error{Kind: ErrStateMismatch, Op: "check the authorization response", Description: desc})
	}
	// RFC 9207, before anything in the response is acted on (its error
	// included): a present iss must be the recorded issuer, compared as
	// plain strings (no case folding, no trailing-slash or port
	// normalization); an absent one is refused only where the metadata
	// promised it.
	if err := c.checkIss(res.iss, as); err != nil {
		return nil, err
	}
	if res.errCode != "" {
		return nil, c.failWith(&Error{Kind: ErrAuthorizationDenied, Op: "authorization", URL: as.AuthorizationEndpoint,
			OAuthError: sanitize.ForDisplayLimit(res.errCode, 100), Description: sanitize.ForDisplayLimit(res.errDesc, 300)})
	}
	if res.code == "" {
		return nil, c.failWith(&Error{Kind: ErrAuthorizationDenied, Op: "authorization", URL: as.AuthorizationEndpoint,
			Description: "the redirect carried no authorization code"})
	}

	// With DPoP the exchange may be answered use_dpop_nonce and sent
	// again; a client assertion is made afresh for each attempt (its jti
	// must not repeat).
	tok, err := withNonceRetry(key, func() (*oauth2.Token, error) {
		opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource)}
		_, _, extra, err := c.clientAuth(as, ci)
		if err != nil {
			return nil, err
		}
		for k, v := range extra {
			opts = append(opts, oauth2.SetAuthURLParam(k, v[0]))
		}
		return oc.Exchange(c.tokenCtx(ctx, key), res.code, opts...)
	})
	if err != nil {
		if ci.Source == "dcr" {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.ErrorCode == "invalid_client" {
				c.forgetRegistration(as.Issuer)
			}
		}
		return nil, c.tokenError(ctx, "authorization code exchange", as.TokenEndpoint, err)
	}
	st := c.toStored(tok, scopes)
	if err := bind(st, key); err != nil {
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: "authorization code exchange", Err: err})
	}
	c.log.Debug("access token obtained", "grant", "authorization_code", "dpop", st.usesDPoP(), "expires", st.Expiry, "refresh", st.RefreshToken != "")
	c.saveToken(d, ci, st)
	return st, nil
}

// checkIss applies RFC 9207 section 2.4 as the MCP authorization spec
// (2026-07-28) tightens it: as.Issuer is the issuer recorded from the
// validated metadata before the browser was sent off. Without a metadata
// document (the 2025-03-26 default endpoints, or endpoints from the
// config) there is no recorded issuer to compare with, and the response
// is judged by its state alone.
func (c *Client) checkIss(iss string, as *ServerMetadata) error {
	switch {
	case as.URL == "":
		if iss != "" {
			c.log.Debug("iss in the authorization response not checked: the authorization server has no metadata", "iss", sanitize.ForDisplayLimit(iss, 200))
		}
		return nil
	case iss == "" && !as.AuthorizationResponseIssParameterSupported:
		return nil
	case iss == "":
		return c.failWith(&Error{Kind: ErrIssMismatch, Op: "check the authorization response", URL: as.AuthorizationEndpoint,
			Description: "the response has no iss although the metadata of " + quoteForMessage(as.Issuer) + " sets authorization_response_iss_parameter_supported"})
	case !sameIssuer(iss, as.Issuer):
		return c.failWith(&Error{Kind: ErrIssMismatch, Op: "check the authorization response", URL: as.AuthorizationEndpoint,
			Description: "the response's iss " + quoteForMessage(sanitize.ForDisplayLimit(iss, 200)) + " is not the issuer " + quoteForMessage(as.Issuer) + " the request was sent to"})
	}
	return nil
}

// callbackHandler serves the redirect URI: the first request that carries
// a code, an error or a state is delivered; everything else is a 404.
func callbackHandler(path string, results chan<- callbackResult) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("code") == "" && q.Get("error") == "" && q.Get("state") == "" {
			http.NotFound(w, r)
			return
		}
		delivered := false
		once.Do(func() {
			results <- callbackResult{
				code:    q.Get("code"),
				state:   q.Get("state"),
				iss:     q.Get("iss"),
				errCode: q.Get("error"),
				errDesc: q.Get("error_description"),
			}
			delivered = true
		})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		switch {
		case !delivered:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, page("This login was already handled", "You can close this window."))
		case q.Get("error") != "":
			fmt.Fprint(w, page("Authorization failed", "Nexus did not get access. Return to the terminal for details; you can close this window."))
		default:
			fmt.Fprint(w, page("Authorization complete", "Nexus received the authorization. You can close this window."))
		}
	})
}

func page(title, msg string) string {
	return "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + title +
		"</title></head><body style=\"font-family:sans-serif;margin:3em\"><h1>" + title + "</h1><p>" + msg + "</p></body></html>"
}

func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// defaultOpener prints the authorization URL and tries to open a browser
// (never failing when none can be opened: the printed URL is enough).
func (c *Client) defaultOpener(ctx context.Context, authURL string) error {
	name := c.cfg.ServerName
	if name == "" {
		name = c.resource
	}
	fmt.Fprintf(c.cfg.Out, "\nTo authorize Nexus to access %q, open this URL in a browser:\n\n  %s\n\nWaiting for the authorization (up to %s)...\n",
		sanitize.ForDisplay(name), sanitize.ForDisplay(authURL), c.cfg.RedirectTimeout)
	if err := openBrowser(authURL); err != nil {
		c.log.Debug("could not open a browser", "error", err)
	}
	return nil
}

// openBrowser launches the platform's URL handler for an http(s) URL.
func openBrowser(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") {
		return errors.New("not an http(s) URL")
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display")
		}
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
