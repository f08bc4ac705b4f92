package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ---- fake authorization server ---------------------------------------------

// fakeAS is an OAuth 2.1 authorization server on 127.0.0.1 that checks
// what a conforming client must send (PKCE S256, resource, client
// authentication, assertions) and records every request.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	// Configuration (set before use).
	prefix          string // issuer path, e.g. "/tenant1"
	metaLocation    string // "oauth" (default), "oidc", "oidc-append", "none"
	noS256          bool
	cimd            bool
	noDCR           bool
	authMethods     []string // token_endpoint_auth_methods_supported; nil = ["none"]
	scopesSupported []string
	issuerOverride  string
	issParam        bool // advertise and send RFC 9207 iss
	// issSend overrides the iss put in the redirect: "omit", "correct",
	// "wrong" (another issuer), "slash" (the issuer plus "/").
	issSend string
	// DPoP: the algorithms advertised (nil: no DPoP support advertised),
	// a nonce the token endpoint requires, and whether to ignore proofs
	// (issue bearer tokens regardless).
	dpopAlgs      []string
	dpopNonce     string
	dpopIgnore    bool
	grantTypes    []string
	revocation    bool
	expiresIn     int
	alwaysRefresh bool // issue refresh tokens without offline_access

	tokenStatus int    // force an error status from the token endpoint
	tokenBody   string // with this body
	regStatus   int
	regBody     string
	regMethod   string // token_endpoint_auth_method the registration returns
	regSecret   bool   // registration returns a client_secret

	clients   map[string]string // pre-registered client_id -> secret
	clientKey crypto.PublicKey  // private_key_jwt verification key
	idpKey    *ecdsa.PublicKey  // verifies ID-JAGs
	idpIssuer string
	// workloadKey, when set, makes the JWT bearer grant take workload
	// JWTs (SEP-1933) with this key and aud the issuer, not ID-JAGs.
	workloadKey *ecdsa.PublicKey

	mu            sync.Mutex
	metaHits      []string
	authorizeReqs []url.Values
	tokenReqs     []tokenReq
	registrations []map[string]any
	codes         map[string]codeInfo
	tokens        map[string][]string // access token -> scopes
	refresh       map[string][]string
	revoked       []string
	n             int
	failures      []string          // client mistakes the AS noticed
	bound         map[string]string // DPoP-bound access or refresh token -> key thumbprint
	dpopProofs    int               // valid proofs at the token endpoint
	nonceAsked    int               // use_dpop_nonce answers
}

type tokenReq struct {
	form       url.Values
	basicUser  string
	basicPass  string
	hasBasic   bool
	authMethod string // what the client used
}

type codeInfo struct {
	challenge, method, scope, resource, clientID, redirect string
}

func newFakeAS(t *testing.T) *fakeAS {
	a := &fakeAS{t: t, clients: map[string]string{}, codes: map[string]codeInfo{}, tokens: map[string][]string{}, refresh: map[string][]string{}, expiresIn: 3600}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAS) issuer() string { return a.srv.URL + a.prefix }

func (a *fakeAS) fail(format string, args ...any) {
	a.mu.Lock()
	a.failures = append(a.failures, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

func (a *fakeAS) checkNoFailures() {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.failures {
		a.t.Errorf("authorization server saw: %s", f)
	}
}

func (a *fakeAS) metadataPath() string {
	switch a.metaLocation {
	case "oidc":
		return "/.well-known/openid-configuration" + a.prefix
	case "oidc-append":
		return a.prefix + "/.well-known/openid-configuration"
	case "none":
		return "-"
	}
	return "/.well-known/oauth-authorization-server" + a.prefix
}

func (a *fakeAS) metadata() map[string]any {
	m := map[string]any{
		"issuer":                   a.issuer(),
		"authorization_endpoint":   a.issuer() + "/authorize",
		"token_endpoint":           a.issuer() + "/token",
		"response_types_supported": []string{"code"},
	}
	if a.issuerOverride != "" {
		m["issuer"] = a.issuerOverride
	}
	if !a.noDCR {
		m["registration_endpoint"] = a.issuer() + "/register"
	}
	if !a.noS256 {
		m["code_challenge_methods_supported"] = []string{"S256"}
	} else {
		m["code_challenge_methods_supported"] = []string{"plain"}
	}
	if a.authMethods != nil {
		m["token_endpoint_auth_methods_supported"] = a.authMethods
	} else {
		m["token_endpoint_auth_methods_supported"] = []string{"none"}
	}
	if a.scopesSupported != nil {
		m["scopes_supported"] = a.scopesSupported
	}
	if a.cimd {
		m["client_id_metadata_document_supported"] = true
	}
	if a.issParam {
		m["authorization_response_iss_parameter_supported"] = true
	}
	if a.grantTypes != nil {
		m["grant_types_supported"] = a.grantTypes
	}
	if a.revocation {
		m["revocation_endpoint"] = a.issuer() + "/revoke"
	}
	if a.dpopAlgs != nil {
		m["dpop_signing_alg_values_supported"] = a.dpopAlgs
	}
	return m
}

func (a *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if strings.Contains(p, "/.well-known/") {
		a.mu.Lock()
		a.metaHits = append(a.metaHits, p)
		a.mu.Unlock()
		if p == a.metadataPath() {
			writeJSON(w, 200, a.metadata())
			return
		}
		http.NotFound(w, r)
		return
	}
	switch strings.TrimPrefix(p, a.prefix) {
	case "/authorize":
		a.authorize(w, r)
	case "/token":
		a.token(w, r)
	case "/register":
		a.register(w, r)
	case "/revoke":
		r.ParseForm()
		a.mu.Lock()
		a.revoked = append(a.revoked, r.PostForm.Get("token"))
		a.mu.Unlock()
		w.WriteHeader(200)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (a *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.authorizeReqs = append(a.authorizeReqs, q)
	a.mu.Unlock()
	if q.Get("response_type") != "code" {
		a.fail("response_type %q", q.Get("response_type"))
	}
	if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		a.fail("authorization request without PKCE S256: %v", q)
	}
	if q.Get("resource") == "" {
		a.fail("authorization request without resource")
	}
	if q.Get("state") == "" {
		a.fail("authorization request without state")
	}
	if q.Get("client_id") == "" {
		a.fail("authorization request without client_id")
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || !isLoopbackHost(redirect.Hostname()) {
		a.fail("redirect_uri %q", q.Get("redirect_uri"))
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	a.mu.Lock()
	a.n++
	code := "code-" + strconv.Itoa(a.n)
	a.codes[code] = codeInfo{
		challenge: q.Get("code_challenge"), method: q.Get("code_challenge_method"),
		scope: q.Get("scope"), resource: q.Get("resource"), clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"),
	}
	a.mu.Unlock()
	rq := redirect.Query()
	rq.Set("code", code)
	if s := q.Get("state"); s != "" {
		rq.Set("state", s)
	}
	switch {
	case a.issSend == "correct", a.issSend == "" && a.issParam:
		rq.Set("iss", a.issuer())
	case a.issSend == "wrong":
		rq.Set("iss", "https://evil.example.com")
	case a.issSend == "slash":
		rq.Set("iss", a.issuer()+"/")
	}
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (a *fakeAS) secretOf(id string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.clients[id]
	return s, ok
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// clientAuth works out which authentication the client used and checks it.
func (a *fakeAS) clientAuth(r *http.Request, tr *tokenReq) (clientID string, ok bool) {
	f := r.PostForm
	user, pass, hasBasic := r.BasicAuth()
	tr.basicUser, tr.basicPass, tr.hasBasic = user, pass, hasBasic
	switch {
	case hasBasic:
		tr.authMethod = authBasic
		u, _ := url.QueryUnescape(user)
		p, _ := url.QueryUnescape(pass)
		if f.Get("client_secret") != "" {
			a.fail("client secret sent both in the header and the body")
		}
		if want, known := a.secretOf(u); known && want != p {
			return u, false
		}
		return u, true
	case f.Get("client_assertion") != "":
		tr.authMethod = authPrivateKeyJWT
		if f.Get("client_assertion_type") != assertionTypeJWT {
			a.fail("client_assertion_type %q", f.Get("client_assertion_type"))
			return "", false
		}
		tok, err := jwt.Parse(f.Get("client_assertion"), func(*jwt.Token) (any, error) { return a.clientKey, nil },
			jwt.WithValidMethods([]string{"ES256", "RS256", "EdDSA"}), jwt.WithAudience(a.issuer()), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(time.Minute))
		if err != nil {
			a.fail("client assertion: %v", err)
			return "", false
		}
		c := tok.Claims.(jwt.MapClaims)
		iss, _ := c.GetIssuer()
		sub, _ := c.GetSubject()
		if iss != sub || iss == "" || (f.Get("client_id") != "" && f.Get("client_id") != iss) {
			a.fail("client assertion iss %q sub %q client_id %q", iss, sub, f.Get("client_id"))
			return "", false
		}
		if c["jti"] == nil {
			a.fail("client assertion without jti")
		}
		return iss, true
	case f.Get("client_secret") != "":
		tr.authMethod = authPost
		id := f.Get("client_id")
		if want, known := a.secretOf(id); known && want != f.Get("client_secret") {
			return id, false
		}
		return id, true
	default:
		tr.authMethod = authNone
		return f.Get("client_id"), true
	}
}

func (a *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	tr := tokenReq{form: r.PostForm}
	clientID, ok := a.clientAuth(r, &tr)
	a.mu.Lock()
	a.tokenReqs = append(a.tokenReqs, tr)
	a.mu.Unlock()
	if a.tokenStatus != 0 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(a.tokenStatus)
		io.WriteString(w, a.tokenBody)
		return
	}
	if !ok {
		writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "bad client credentials"})
		return
	}
	f := r.PostForm
	if f.Get("resource") == "" {
		a.fail("token request (%s) without resource", f.Get("grant_type"))
	}
	jkt := ""
	if proof := r.Header.Values("DPoP"); len(proof) > 0 && !a.dpopIgnore {
		if len(proof) > 1 {
			a.fail("%d DPoP headers", len(proof))
		}
		var nonce string
		var err error
		jkt, nonce, err = verifyProof(proof[0], http.MethodPost, a.issuer()+"/token", "")
		if err != nil {
			a.fail("token endpoint DPoP proof: %v", err)
			writeJSON(w, 400, map[string]string{"error": "invalid_dpop_proof", "error_description": err.Error()})
			return
		}
		a.mu.Lock()
		a.dpopProofs++
		a.mu.Unlock()
		if a.dpopNonce != "" && nonce != a.dpopNonce {
			a.mu.Lock()
			a.nonceAsked++
			a.mu.Unlock()
			w.Header().Set("DPoP-Nonce", a.dpopNonce)
			writeJSON(w, 400, map[string]string{"error": "use_dpop_nonce", "error_description": "a nonce is required"})
			return
		}
	}
	if rt := f.Get("refresh_token"); rt != "" {
		a.mu.Lock()
		want := a.bound[rt]
		a.mu.Unlock()
		if want != "" && want != jkt {
			a.fail("refresh of a DPoP-bound refresh token without a proof of its key")
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		a.mu.Lock()
		ci, found := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		a.mu.Unlock()
		if !found {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		if s256(f.Get("code_verifier")) != ci.challenge {
			a.fail("code_verifier does not match the code_challenge")
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
			return
		}
		if f.Get("resource") != ci.resource {
			a.fail("resource %q in the token request, %q in the authorization request", f.Get("resource"), ci.resource)
		}
		if f.Get("redirect_uri") != ci.redirect {
			a.fail("redirect_uri differs between authorization and token requests")
		}
		if clientID != ci.clientID {
			a.fail("client %q exchanged the code of %q", clientID, ci.clientID)
		}
		scopes = strings.Fields(ci.scope)
	case "refresh_token":
		a.mu.Lock()
		s, found := a.refresh[f.Get("refresh_token")]
		delete(a.refresh, f.Get("refresh_token"))
		a.mu.Unlock()
		if !found {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		scopes = s
	case "client_credentials":
		scopes = strings.Fields(f.Get("scope"))
	case grantJWTBearer:
		if a.workloadKey != nil {
			_, err := jwt.Parse(f.Get("assertion"), func(*jwt.Token) (any, error) { return a.workloadKey, nil },
				jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(a.issuer()), jwt.WithExpirationRequired())
			if err != nil {
				writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "workload JWT: " + err.Error()})
				return
			}
			scopes = strings.Fields(f.Get("scope"))
			if contains(scopes, "wif.rejected") {
				writeJSON(w, 400, map[string]string{"error": "invalid_scope"})
				return
			}
			break
		}
		if !a.checkIDJAG(f.Get("assertion"), clientID, f.Get("resource")) {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		scopes = strings.Fields(f.Get("scope"))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	a.mu.Lock()
	a.n++
	at := "at-" + strconv.Itoa(a.n)
	a.tokens[at] = scopes
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.expiresIn}
	if jkt != "" {
		if a.bound == nil {
			a.bound = map[string]string{}
		}
		a.bound[at] = jkt
		resp["token_type"] = "DPoP"
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	if f.Get("grant_type") != "client_credentials" && f.Get("grant_type") != grantJWTBearer &&
		(a.alwaysRefresh || contains(scopes, "offline_access")) {
		rt := "rt-" + strconv.Itoa(a.n)
		a.refresh[rt] = scopes
		if jkt != "" {
			a.bound[rt] = jkt
		}
		resp["refresh_token"] = rt
	}
	a.mu.Unlock()
	writeJSON(w, 200, resp)
}

func (a *fakeAS) checkIDJAG(assertion, clientID, resource string) bool {
	tok, err := jwt.Parse(assertion, func(*jwt.Token) (any, error) { return a.idpKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(a.issuer()), jwt.WithIssuer(a.idpIssuer))
	if err != nil {
		a.fail("ID-JAG: %v", err)
		return false
	}
	if tok.Header["typ"] != "oauth-id-jag+jwt" {
		a.fail("ID-JAG typ %v", tok.Header["typ"])
		return false
	}
	c := tok.Claims.(jwt.MapClaims)
	if c["client_id"] != clientID {
		a.fail("ID-JAG client_id %v, authenticated %q", c["client_id"], clientID)
		return false
	}
	if c["resource"] != resource {
		a.fail("ID-JAG resource %v, requested %q", c["resource"], resource)
		return false
	}
	return true
}

func (a *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	a.mu.Lock()
	a.registrations = append(a.registrations, body)
	a.n++
	// Unique across fake servers, so a client id says which one issued it.
	id := "dcr-client-" + strings.TrimPrefix(a.srv.URL, "http://127.0.0.1:") + "-" + strconv.Itoa(a.n)
	body["_client_id"] = id
	a.mu.Unlock()
	if a.regStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.regStatus)
		io.WriteString(w, a.regBody)
		return
	}
	resp := map[string]any{"client_id": id, "redirect_uris": body["redirect_uris"], "client_name": body["client_name"]}
	if a.regSecret {
		secret := "dcr-secret-" + id
		resp["client_secret"] = secret
		a.mu.Lock()
		a.clients[id] = secret
		a.mu.Unlock()
	}
	if a.regMethod != "" {
		resp["token_endpoint_auth_method"] = a.regMethod
	}
	writeJSON(w, 201, resp)
}

func (a *fakeAS) snapshot() (authz []url.Values, toks []tokenReq, regs []map[string]any, hits []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]url.Values(nil), a.authorizeReqs...), append([]tokenReq(nil), a.tokenReqs...),
		append([]map[string]any(nil), a.registrations...), append([]string(nil), a.metaHits...)
}

func (a *fakeAS) boundTo(token string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bound[token]
}

// verifyProof checks a DPoP proof as RFC 9449 section 4.3 has a server
// do: typ, an asymmetric alg, a public jwk that verifies the signature,
// jti, htm, htu (no query or fragment), a recent iat, and ath for
// accessToken. It returns the key's thumbprint and the proof's nonce.
func verifyProof(proof, method, target, accessToken string) (jkt, nonce string, err error) {
	var jwk map[string]any
	tok, err := jwt.Parse(proof, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != "dpop+jwt" {
			return nil, fmt.Errorf("typ %v", t.Header["typ"])
		}
		jwk, _ = t.Header["jwk"].(map[string]any)
		if jwk == nil || jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk["d"] != nil {
			return nil, fmt.Errorf("jwk %v", t.Header["jwk"])
		}
		xs, _ := jwk["x"].(string)
		ys, _ := jwk["y"].(string)
		x, err1 := base64.RawURLEncoding.DecodeString(xs)
		y, err2 := base64.RawURLEncoding.DecodeString(ys)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("jwk coordinates")
		}
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil {
		return "", "", err
	}
	c := tok.Claims.(jwt.MapClaims)
	if s, _ := c["jti"].(string); len(s) < 16 {
		return "", "", fmt.Errorf("jti %v", c["jti"])
	}
	if c["htm"] != method {
		return "", "", fmt.Errorf("htm %v, want %s", c["htm"], method)
	}
	if h, _ := c["htu"].(string); h != target || strings.ContainsAny(h, "?#") {
		return "", "", fmt.Errorf("htu %v, want %s", c["htu"], target)
	}
	iat, _ := c["iat"].(float64)
	if d := time.Since(time.Unix(int64(iat), 0)); d > 5*time.Minute || d < -5*time.Minute {
		return "", "", fmt.Errorf("iat %v", c["iat"])
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return "", "", fmt.Errorf("ath %v does not match the token", c["ath"])
		}
	} else if c["ath"] != nil {
		return "", "", fmt.Errorf("ath in a token request")
	}
	th := `{"crv":"P-256","kty":"EC","x":"` + jwk["x"].(string) + `","y":"` + jwk["y"].(string) + `"}`
	sum := sha256.Sum256([]byte(th))
	nonce, _ = c["nonce"].(string)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nonce, nil
}

func (a *fakeAS) scopesOf(token string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.tokens[token]
	return s, ok
}

// ---- fake enterprise IdP ----------------------------------------------------

type fakeIdP struct {
	srv      *httptest.Server
	key      *ecdsa.PrivateKey
	idToken  string
	clientID string // the MCP client's id at the AS, put in the ID-JAG
	mu       sync.Mutex
	reqs     []url.Values
	bad      []string
}

func newFakeIdP(t *testing.T, asClientID string) *fakeIdP {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeIdP{key: key, idToken: "id-token-of-alice", clientID: asClientID}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeIdP) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		writeJSON(w, 200, map[string]any{"issuer": p.srv.URL, "token_endpoint": p.srv.URL + "/token", "authorization_endpoint": p.srv.URL + "/authorize"})
	case "/token":
		r.ParseForm()
		f := r.PostForm
		p.mu.Lock()
		p.reqs = append(p.reqs, f)
		p.mu.Unlock()
		var bad []string
		if f.Get("grant_type") != grantTokenExchange {
			bad = append(bad, "grant_type")
		}
		if f.Get("requested_token_type") != tokenTypeIDJAG {
			bad = append(bad, "requested_token_type")
		}
		if f.Get("subject_token_type") != tokenTypeIDToken {
			bad = append(bad, "subject_token_type")
		}
		if f.Get("subject_token") != p.idToken {
			bad = append(bad, "subject_token")
		}
		if f.Get("audience") == "" || f.Get("resource") == "" {
			bad = append(bad, "audience/resource")
		}
		if len(bad) > 0 {
			p.mu.Lock()
			p.bad = append(p.bad, bad...)
			p.mu.Unlock()
			writeJSON(w, 400, map[string]string{"error": "invalid_request", "error_description": strings.Join(bad, ", ")})
			return
		}
		t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": p.srv.URL, "sub": "alice", "aud": f.Get("audience"), "resource": f.Get("resource"),
			"client_id": p.clientID, "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(), "jti": "j1",
		})
		t.Header["typ"] = "oauth-id-jag+jwt"
		s, _ := t.SignedString(p.key)
		writeJSON(w, 200, map[string]any{"access_token": s, "issued_token_type": tokenTypeIDJAG, "token_type": "N_A"})
	default:
		http.NotFound(w, r)
	}
}

// ---- fake MCP server (protected resource) -----------------------------------

// fakeRS is an MCP endpoint at /mcp guarded by bearer tokens of a fakeAS.
type fakeRS struct {
	srv *httptest.Server
	as  *fakeAS

	prm             string // "header" (default: path-aware PRM, URL in the header), "path", "root", "custom", "none"
	prmResource     string // override of the PRM's resource
	scopesSupported []string
	headerScope     string                   // scope= in the 401 challenge
	required        func(op string) []string // scopes an operation needs
	always401       bool
	always403       bool
	legacyAS        http.Handler // mounted at the root for 2025-03-26 servers
	// moveTo, when set, becomes the server's authorization server right
	// after the first request it accepts (a migration, SEP-2352): its
	// PRM names it from then on and only its tokens are valid.
	moveTo *fakeAS
	// DPoP: challenge with the DPoP scheme only (the server takes bound
	// tokens only), and require this nonce in proofs.
	dpopOnly        bool
	prmDPoPRequired bool
	dpopNonce       string
	// nonceAlways answers use_dpop_nonce even to the right nonce (a
	// broken server).
	nonceAlways bool
	// rotateNonce hands out a new nonce on every success (section 8.2).
	rotateNonce bool
	jtis        map[string]bool
	nonceAsks   int

	hits    atomic.Int32
	prmHits []string
	mu      sync.Mutex
}

func newFakeRS(t *testing.T, as *fakeAS) *fakeRS {
	rs := &fakeRS{as: as, prm: "header"}
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *fakeRS) url() string { return rs.srv.URL + "/mcp" }

func (rs *fakeRS) prmPath() string {
	switch rs.prm {
	case "root":
		return "/.well-known/oauth-protected-resource"
	case "custom":
		return "/custom/metadata.json"
	case "none":
		return "-"
	}
	return "/.well-known/oauth-protected-resource/mcp"
}

func (rs *fakeRS) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") || r.URL.Path == "/custom/metadata.json" {
		rs.mu.Lock()
		rs.prmHits = append(rs.prmHits, r.URL.Path)
		rs.mu.Unlock()
		if r.URL.Path != rs.prmPath() {
			http.NotFound(w, r)
			return
		}
		res := rs.url()
		if rs.prm == "root" {
			res = rs.srv.URL
		}
		if rs.prmResource != "" {
			res = rs.prmResource
		}
		m := map[string]any{"resource": res, "authorization_servers": []string{rs.currentAS().issuer()}}
		if rs.scopesSupported != nil {
			m["scopes_supported"] = rs.scopesSupported
		}
		if rs.prmDPoPRequired {
			m["dpop_bound_access_tokens_required"] = true
		}
		writeJSON(w, 200, m)
		return
	}
	if r.URL.Path != "/mcp" {
		if rs.legacyAS != nil {
			rs.legacyAS.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	rs.hits.Add(1)
	op := r.URL.Query().Get("op")
	challenge := "Bearer"
	if rs.dpopOnly {
		challenge = "DPoP"
	}
	var params []string
	if rs.prm == "header" || rs.prm == "custom" {
		params = append(params, `resource_metadata="`+rs.srv.URL+rs.prmPath()+`"`)
	}
	authz := r.Header.Get("Authorization")
	tok := bearerOf(authz)
	scopes, valid := rs.currentAS().scopesOf(tok)
	if jkt := rs.currentAS().boundTo(tok); valid && jkt != "" {
		// A bound token: the DPoP scheme and a fresh proof of its key.
		got, nonce, err := verifyProof(r.Header.Get("DPoP"), r.Method, rs.url(), tok)
		switch {
		case !strings.HasPrefix(authz, "DPoP "):
			rs.currentAS().fail("a DPoP-bound token presented as %q", strings.Fields(authz)[0])
			valid = false
		case err != nil:
			rs.currentAS().fail("resource request DPoP proof: %v", err)
			valid = false
		case got != jkt:
			rs.currentAS().fail("proof key %s, token bound to %s", got, jkt)
			valid = false
		default:
			p, _, _ := jwt.NewParser().ParseUnverified(r.Header.Get("DPoP"), jwt.MapClaims{})
			jti, _ := p.Claims.(jwt.MapClaims)["jti"].(string)
			rs.mu.Lock()
			if rs.jtis == nil {
				rs.jtis = map[string]bool{}
			}
			replay := rs.jtis[jti]
			rs.jtis[jti] = true
			rs.mu.Unlock()
			if replay {
				rs.currentAS().fail("a DPoP proof was sent twice (jti %s)", jti)
			}
			rs.mu.Lock()
			want := rs.dpopNonce
			rs.mu.Unlock()
			if want != "" && (nonce != want || rs.nonceAlways) {
				rs.mu.Lock()
				rs.nonceAsks++
				rs.mu.Unlock()
				w.Header().Set("DPoP-Nonce", want)
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", `+strings.Join(params, ", "))
				writeJSON(w, 401, map[string]string{"error": "use_dpop_nonce"})
				return
			}
		}
	} else if valid && rs.dpopOnly {
		valid = false // a bearer token where only bound ones are taken
	}
	if tok == "" || !valid || rs.always401 {
		if rs.headerScope != "" {
			params = append(params, `scope="`+rs.headerScope+`"`)
		}
		if tok != "" {
			params = append(params, `error="invalid_token"`)
		}
		w.Header().Set("WWW-Authenticate", challenge+" "+strings.Join(params, ", "))
		writeJSON(w, 401, map[string]string{"error": "invalid_token"})
		return
	}
	var need []string
	if rs.required != nil {
		need = rs.required(op)
	}
	if rs.always403 || !scopesCover(scopes, need) {
		params = append(params, `error="insufficient_scope"`, `scope="`+strings.Join(need, " ")+`"`, `error_description="need more"`)
		w.Header().Set("WWW-Authenticate", challenge+" "+strings.Join(params, ", "))
		writeJSON(w, 403, map[string]string{"error": "insufficient_scope"})
		return
	}
	rs.mu.Lock()
	if rs.moveTo != nil {
		rs.as, rs.moveTo = rs.moveTo, nil
	}
	if rs.rotateNonce && rs.dpopNonce != "" {
		rs.dpopNonce += "+"
		w.Header().Set("DPoP-Nonce", rs.dpopNonce)
	}
	rs.mu.Unlock()
	writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"op": op}})
}

func (rs *fakeRS) currentAS() *fakeAS {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.as
}

// ---- a transport's use of the Authorizer ------------------------------------

// call does what a transport does: Authorize, send, and on 401/403 ask
// Challenge whether to retry. It fails the test if the loop does not end.
func call(t *testing.T, ctx context.Context, a Authorizer, target string) (*http.Response, error) {
	t.Helper()
	for i := 0; i < 20; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if err := a.Authorize(ctx, req); err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == 401 || resp.StatusCode == 403 {
			retry, err := a.Challenge(ctx, resp)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, err
			}
			if retry {
				continue
			}
		}
		if o, ok := a.(interface{ Observe(*http.Response) }); ok {
			o.Observe(resp)
		}
		return resp, nil
	}
	t.Fatal("the authorization loop did not end after 20 rounds")
	return nil, nil
}

// followOpener follows the authorization redirect like a browser whose
// user approves at once; mutate may tamper with the redirect first.
func followOpener(t *testing.T, mutate func(u *url.URL)) Opener {
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	return func(ctx context.Context, authURL string) error {
		resp, err := noFollow.Get(authURL)
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound {
			return fmt.Errorf("authorize answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if mutate != nil {
			mutate(loc)
		}
		resp, err = noFollow.Get(loc.String())
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
}

// newTestClient is a Client for rs with a temporary token store and the
// following opener.
func newTestClient(t *testing.T, rs *fakeRS, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		ServerName:      "test",
		ServerURL:       rs.url(),
		TokenDir:        t.TempDir(),
		Opener:          followOpener(t, nil),
		HTTPClient:      &http.Client{Timeout: 10 * time.Second},
		RedirectTimeout: 10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ecKeyPEM is a fresh P-256 key as PKCS #8 PEM and its public key.
func ecKeyPEM(t *testing.T) ([]byte, *ecdsa.PublicKey) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), &k.PublicKey
}
