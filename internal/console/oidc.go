package console

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// OpenID Connect login: a person logs in at the gateway's OAuth issuer
// (the one agents' access tokens come from), and a claim of their ID
// token says their console role. The console is the issuer's client
// (oidc_client_id, and oidc_client_secret for a confidential one): the
// authorization code flow with PKCE (S256), a state bound to the browser
// by a cookie of its own (so a login cannot be planted), and a nonce the
// ID token must carry. A person whose claim holds none of the configured
// values is refused, not given a default role.

// SSO is the issuer's side of the login (*gateway.Login).
type SSO interface {
	Issuer() string
	AuthURL(ctx context.Context, clientID, redirectURI, state, nonce, challenge string) (string, error)
	Redeem(ctx context.Context, clientID, secret, redirectURI, code, verifier, nonce string) (map[string]any, error)
}

// Bounds of the logins under way.
const (
	oidcCookie   = "nexus_console_oidc"
	oidcTTL      = 10 * time.Minute // from the redirect to the issuer to the way back
	maxPending   = 1024
	oidcWait     = 20 * time.Second // redeeming the code
	maxClaimText = 256
)

// pendingLogin is a login sent to the issuer, by its state.
type pendingLogin struct {
	nonce, verifier string
	expires         time.Time
}

type pendingLogins struct {
	mu sync.Mutex
	m  map[string]pendingLogin
}

// add keeps a login under way; false when maxPending are.
func (p *pendingLogins) add(state string, l pendingLogin) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pendingLogin{}
	}
	if len(p.m) >= maxPending {
		now := time.Now()
		for s, x := range p.m {
			if now.After(x.expires) {
				delete(p.m, s)
			}
		}
		if len(p.m) >= maxPending {
			return false
		}
	}
	p.m[state] = l
	return true
}

// take returns the login of state, once.
func (p *pendingLogins) take(state string) (pendingLogin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.m[state]
	delete(p.m, state)
	return l, ok && time.Now().Before(l.expires)
}

// redirectURI is where the issuer sends the person back: the console's
// own address, as the browser reached it.
func (k *Console) redirectURI(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/login/callback"
}

func (k *Console) oidcCookie(w http.ResponseWriter, value string, maxAge int) {
	// Lax, not Strict: the way back from the issuer is another site's
	// redirect, on which a Strict cookie is not sent.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: value, Path: "/login", MaxAge: maxAge,
		HttpOnly: true, Secure: k.secure(), SameSite: http.SameSiteLaxMode})
}

// oidcStart sends the person to the issuer.
func (k *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if k.c.SSO == nil || k.c.OIDCClientID == "" {
		k.refuse(w, r, http.StatusNotFound, "This console has no single sign-on; log in with a token.")
		return
	}
	state, nonce, verifier := randomID(), randomID(), randomID()
	if !k.pending.add(state, pendingLogin{nonce: nonce, verifier: verifier, expires: time.Now().Add(oidcTTL)}) {
		k.refuse(w, r, http.StatusServiceUnavailable, "Too many logins are under way; try again in a few minutes.")
		return
	}
	sum := sha256.Sum256([]byte(verifier))
	ctx, cancel := context.WithTimeout(r.Context(), oidcWait)
	defer cancel()
	to, err := k.c.SSO.AuthURL(ctx, k.c.OIDCClientID, k.redirectURI(r), state, nonce, base64.RawURLEncoding.EncodeToString(sum[:]))
	if err != nil {
		k.log.Error("console: the single sign-on cannot start", "error", err)
		k.render(w, r, http.StatusBadGateway, "login", nil, k.loginData("The single sign-on cannot start: "+err.Error()))
		return
	}
	k.oidcCookie(w, state, int(oidcTTL/time.Second))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// oidcCallback is the way back from the issuer: the state must be the
// one this browser was sent with, the code is redeemed for an ID token,
// and its role claim decides the login's role.
func (k *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if k.c.SSO == nil || k.c.OIDCClientID == "" {
		k.refuse(w, r, http.StatusNotFound, "This console has no single sign-on; log in with a token.")
		return
	}
	q := r.URL.Query()
	fail := func(status int, why string) {
		k.logins.failed()
		k.log.Warn("console: a single sign-on login was refused", "why", why, "remote", r.RemoteAddr)
		k.render(w, r, status, "login", nil, k.loginData(why))
	}
	state := q.Get("state")
	c, err := r.Cookie(oidcCookie)
	k.oidcCookie(w, "", -1)
	if err != nil || state == "" || c.Value != state {
		fail(http.StatusForbidden, "This login did not start in this browser (its state does not match): log in again from the console's login page.")
		return
	}
	p, ok := k.pending.take(state)
	if !ok {
		fail(http.StatusForbidden, "This login is unknown or took longer than 10 minutes: log in again.")
		return
	}
	if e := q.Get("error"); e != "" {
		fail(http.StatusUnauthorized, "The issuer refused the login: "+inertN(e+" "+q.Get("error_description"), maxClaimText))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), oidcWait)
	defer cancel()
	claims, err := k.c.SSO.Redeem(ctx, k.c.OIDCClientID, k.c.OIDCClientSecret, k.redirectURI(r), q.Get("code"), p.verifier, p.nonce)
	if err != nil {
		fail(http.StatusUnauthorized, "The login could not be completed: "+err.Error())
		return
	}
	name := claimText(claims, "email")
	if name == "" {
		name = claimText(claims, "sub")
	}
	as, values := k.roleOf(claims)
	if as == 0 {
		fail(http.StatusForbidden, fmt.Sprintf("Your account (%s) has no console role: the claim %q of your ID token holds %s, and the console gives admin to %s and read-only to %s. Ask whoever runs the gateway for a role.",
			name, k.c.RoleClaim, list(values), list(k.c.AdminRoles), list(k.c.ReadOnlyRoles)))
		return
	}
	who := "oidc " + name
	id, ok := k.logins.add(who, as)
	if !ok {
		k.refuse(w, r, http.StatusServiceUnavailable, "The console has as many logins as it keeps; try again once some have expired (they last 8 hours).")
		return
	}
	k.log.Info("console: login", "who", who, "role", as.String(), "remote", r.RemoteAddr)
	k.setCookie(w, id, int(loginTTL/time.Second))
	// A page of our own that moves on to the console, not a redirect:
	// after another site's redirect the browser would not send the
	// SameSite=Strict login cookie on the next request of the chain.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/"><title>Logged in · Nexus console</title></head><body><main><p><a href="/">Continue to the console</a></p></main></body></html>`)
}

// roleOf is the role the ID token's role claim gives, admin first, and
// the claim's values.
func (k *Console) roleOf(claims map[string]any) (role, []string) {
	values := claimTexts(claims[k.c.RoleClaim])
	for _, v := range values {
		if slices.Contains(k.c.AdminRoles, v) {
			return roleAdmin, values
		}
	}
	for _, v := range values {
		if slices.Contains(k.c.ReadOnlyRoles, v) {
			return roleRead, values
		}
	}
	return 0, values
}

// claimTexts is a claim's string values: a string, or an array's strings.
func claimTexts(c any) []string {
	switch c := c.(type) {
	case string:
		return []string{inertN(c, maxClaimText)}
	case []any:
		var out []string
		for _, x := range c[:min(len(c), 64)] {
			if s, ok := x.(string); ok {
				out = append(out, inertN(s, maxClaimText))
			}
		}
		return out
	}
	return nil
}

func claimText(claims map[string]any, name string) string {
	s, _ := claims[name].(string)
	return inertN(s, maxClaimText)
}

func list(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}

// loginView is what the login page offers.
type loginView struct {
	Tokens bool   // the token form
	Issuer string // single sign-on at this issuer, if any
}

func (k *Console) loginData(why string) pageData {
	v := loginView{Tokens: len(k.c.Tokens)+len(k.c.ReadOnly) > 0}
	if k.c.SSO != nil && k.c.OIDCClientID != "" {
		v.Issuer = k.c.SSO.Issuer()
	}
	return pageData{Title: "Log in", Error: why, View: v}
}
