package gateway_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// The gateway as an OAuth resource server, end to end on loopback: its
// metadata, 401 with the challenge that points at it, a JWT from the
// issuer acting as the agent its subject maps to, 403 for one that maps
// to none.
func TestOAuthResourceServer(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "n": enc(key.N.Bytes()), "e": enc(big.NewInt(int64(key.E)).Bytes())}}})
	}))
	defer idp.Close()

	henv := oauthGateway(t, idp.URL)
	public := henv.url + "/mcp"

	resp, err := client.Get(henv.url + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != public || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != idp.URL {
		t.Errorf("metadata %+v", meta)
	}

	r, body := henv.post(initBody, nil)
	if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `resource_metadata="`+henv.url+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("no token: %d %v %s", r.StatusCode, r.Header, body)
	}
	tok := func(sub string, exp time.Time) string {
		j := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": idp.URL, "aud": public, "sub": sub, "exp": exp.Unix(), "iat": time.Now().Unix()})
		j.Header["kid"] = "k1"
		s, _ := j.SignedString(key)
		return s
	}
	r, body = henv.post(initBody, map[string]string{"Authorization": "Bearer " + tok("alice@example.com", time.Now().Add(time.Hour))})
	if r.StatusCode != 200 {
		t.Fatalf("alice: %d %s", r.StatusCode, body)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	r, body = henv.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer " + tok("alice@example.com", time.Now().Add(time.Hour)), "Mcp-Session-Id": sid})
	if !strings.Contains(body, "mcp_testserver_add") {
		t.Errorf("alice's tools: %d %s", r.StatusCode, body)
	}
	r, body = henv.post(initBody, map[string]string{"Authorization": "Bearer " + tok("alice@example.com", time.Now().Add(-time.Hour))})
	if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(body, "expired") {
		t.Errorf("expired: %d %v %s", r.StatusCode, r.Header, body)
	}
	r, body = henv.post(initBody, map[string]string{"Authorization": "Bearer " + tok("mallory@example.com", time.Now().Add(time.Hour))})
	if r.StatusCode != 403 || !strings.Contains(body, "maps to no agent") {
		t.Errorf("unmapped: %d %s", r.StatusCode, body)
	}
	// The agents' own tokens still work beside OAuth.
	if r, body := henv.post(initBody, map[string]string{"Authorization": "Bearer ci-token"}); r.StatusCode != 200 {
		t.Errorf("an agent token: %d %s", r.StatusCode, body)
	}
}

// An issuer whose keys cannot be fetched leaves a token unjudged: 503 with
// Retry-After and a message naming the key set, not a 401 that would send
// the client to get a new token it does not need.
func TestOAuthIssuerDown(t *testing.T) {
	idp := httptest.NewServer(http.NotFoundHandler())
	idp.Close() // nothing listens there any more

	henv := oauthGateway(t, idp.URL)
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	j := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": idp.URL, "aud": henv.url + "/mcp", "sub": "alice@example.com", "exp": time.Now().Add(time.Hour).Unix()})
	j.Header["kid"] = "k1"
	tok, _ := j.SignedString(key)
	r, body := henv.post(initBody, map[string]string{"Authorization": "Bearer " + tok})
	if r.StatusCode != 503 || r.Header.Get("Retry-After") == "" || !strings.Contains(body, "/jwks") {
		t.Errorf("issuer down: %d %v %s", r.StatusCode, r.Header, body)
	}
}

// oauthGateway is the gateway as an OAuth resource server for issuer (keys
// at issuer/jwks, alice@example.com acting as claude) on loopback, its MCP
// endpoint at url/mcp; edit, if given, changes the oauth block.
func oauthGateway(t *testing.T, issuer string, edit ...func(*config.GatewayOAuth)) *httpEnv {
	t.Helper()
	e := newEnv(t, nil)
	var handler http.Handler = http.NotFoundHandler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(gw.Close)
	o := gateway.HTTPOptions{}
	oc := &config.GatewayOAuth{Issuer: issuer, JWKSURL: issuer + "/jwks", AgentClaim: "sub",
		Agents: map[string]string{"alice@example.com": "claude"}}
	for _, f := range edit {
		f(oc)
	}
	err := gateway.OAuth(&config.Gateway{OAuth: oc}, gw.URL+"/mcp", &o)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := e.g.HTTP(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hh.Close() })
	handler = hh
	return &httpEnv{env: e, hh: hh, url: gw.URL}
}
