package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nexus-mcp/nexus/internal/auth"
)

// A person's login through the same issuer (the console's OpenID Connect
// login): the issuer's endpoints from its metadata, and its ID tokens
// checked with the very keys, algorithms and clock access tokens are.

// Endpoints are where a person is sent to log in and where the code is
// redeemed, from the issuer's metadata (the document whose issuer is
// exactly the configured one).
type Endpoints struct {
	Authorization, Token string
}

// Endpoints finds the issuer's authorization and token endpoints.
func (v *Validator) Endpoints(ctx context.Context) (Endpoints, error) {
	var problems []string
	for _, mu := range auth.MetadataURLs(v.cfg.Issuer) {
		body, _, err := v.get(ctx, mu, "metadata")
		if err != nil {
			if ctx.Err() != nil {
				return Endpoints{}, err
			}
			problems = append(problems, err.Error())
			continue
		}
		var meta struct {
			Issuer        string `json:"issuer"`
			Authorization string `json:"authorization_endpoint"`
			Token         string `json:"token_endpoint"`
		}
		if err := json.Unmarshal(body, &meta); err != nil || meta.Issuer != v.cfg.Issuer {
			problems = append(problems, fmt.Sprintf("%s is not the metadata of issuer %s", mu, v.cfg.Issuer))
			continue
		}
		e := Endpoints{Authorization: meta.Authorization, Token: meta.Token}
		if err := checkURL("authorization_endpoint", e.Authorization, "an https URL"); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", mu, err))
			continue
		}
		if err := checkURL("token_endpoint", e.Token, "an https URL"); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", mu, err))
			continue
		}
		return e, nil
	}
	return Endpoints{}, fmt.Errorf("cannot find the login endpoints of %s: %s; check the gateway's oauth issuer", v.cfg.Issuer, strings.Join(problems, "; "))
}

// Redeem trades an authorization code (with its PKCE verifier) at the
// token endpoint for the person's ID token, checks it (IDToken) and
// returns its claims. secret is the client's, "" for a public client.
func (v *Validator) Redeem(ctx context.Context, e Endpoints, clientID, secret, redirectURI, code, verifier, nonce string) (map[string]any, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "client_id": {clientID}, "code_verifier": {verifier}}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Token, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret)) // RFC 6749 section 2.3.1
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("redeeming the login's code at %s failed: %v (is the issuer reachable?)", e.Token, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil || len(body) > MaxDocumentBytes {
		return nil, fmt.Errorf("the token endpoint %s answered more than %d bytes, or could not be read", e.Token, MaxDocumentBytes)
	}
	var tr struct {
		IDToken string `json:"id_token"`
		Error   string `json:"error"`
		Desc    string `json:"error_description"`
	}
	json.Unmarshal(body, &tr)
	switch {
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the token endpoint %s refused the login's code: HTTP %d %s %s (is the console's client id, secret and redirect URI registered there?)", e.Token, resp.StatusCode, quoteValue(tr.Error), quoteValue(tr.Desc))
	case tr.IDToken == "":
		return nil, fmt.Errorf("the token endpoint %s gave no id_token: the login asks for scope openid; is the issuer an OpenID Connect provider?", e.Token)
	}
	return v.IDToken(ctx, tr.IDToken, clientID, nonce)
}

// IDToken checks an OpenID Connect ID token issued to clientID (its aud)
// for the login that sent nonce: signed by the issuer's keys with an
// algorithm access tokens may use, from the configured issuer, not
// expired. It returns the token's claims.
func (v *Validator) IDToken(ctx context.Context, token, clientID, nonce string) (map[string]any, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("the ID token is %d bytes, over the %d-byte limit", len(token), MaxTokenBytes)
	}
	p := jwt.NewParser(jwt.WithValidMethods(algorithms), jwt.WithIssuer(v.cfg.Issuer), jwt.WithAudience(clientID),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(v.cfg.Leeway), jwt.WithTimeFunc(v.cfg.Now), jwt.WithJSONNumber())
	claims := jwt.MapClaims{}
	_, err := p.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("its header lists critical extensions (crit)")
		}
		kid, _ := t.Header["kid"].(string)
		return v.key(ctx, kid, t.Method.Alg())
	})
	if err != nil {
		return nil, fmt.Errorf("the ID token from %s is not valid: %v", v.cfg.Issuer, err)
	}
	if n, _ := claims["nonce"].(string); n == "" || n != nonce {
		return nil, fmt.Errorf("the ID token from %s is not for this login (its nonce differs): log in again", v.cfg.Issuer)
	}
	return claims, nil
}

// Issuer is the configured issuer identifier.
func (v *Validator) Issuer() string { return v.cfg.Issuer }
