package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/auth"
)

// fetchError is a failure to get the issuer's keys: the token could not be
// judged. Its message names the URL, what went wrong and the likely fix.
type fetchError struct {
	msg string
	err error // the underlying cause, if any
}

func (e *fetchError) Error() string { return e.msg }
func (e *fetchError) Unwrap() error { return e.err }

func fetchFailed(cause error, format string, args ...any) *fetchError {
	return &fetchError{msg: fmt.Sprintf(format, args...), err: cause}
}

// flight is one fetch of the key set, shared by the validations waiting
// for it. It runs on its own context, cancelled when its last waiter gives
// up, so one caller's short deadline does not fail the others.
type flight struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // guarded by Validator.mu
	set     *keySet
	err     error
}

// key returns the verification key for a token's kid and alg, fetching the
// key set when there is none yet, when it has expired, or (at most once per
// refetchGap) when it lacks kid.
func (v *Validator) key(ctx context.Context, kid, alg string) (any, error) {
	v.mu.Lock()
	now := v.cfg.Now()
	set := v.set
	var (
		k      key
		reason string
		ok     bool
	)
	if set != nil {
		k, reason, ok = set.pick(kid, alg)
	}
	fresh := set != nil && now.Before(set.expires)
	switch {
	case fresh && ok:
		v.mu.Unlock()
		return k.pub, nil
	case fresh && now.Sub(v.lastFetch) < refetchGap:
		next := v.lastFetch.Add(refetchGap).Sub(now).Round(time.Second)
		v.mu.Unlock()
		return nil, invalid("%s; the set was fetched %v ago, and for an unknown key at most every %v: if %s has just rotated its keys, the gateway fetches them again in %v", reason, now.Sub(set.fetched).Round(time.Second), refetchGap, v.cfg.Issuer, next)
	case !v.failed.IsZero() && now.Sub(v.failed) < failureGap:
		err := v.lastErr
		v.mu.Unlock()
		if ok { // a stale key beats none while the issuer is unreachable
			return k.pub, nil
		}
		return nil, err
	}
	v.mu.Unlock()

	newSet, err := v.refresh(ctx)
	if err != nil {
		if ok {
			return k.pub, nil
		}
		return nil, err
	}
	k, reason, ok = newSet.pick(kid, alg)
	if !ok {
		return nil, invalid("%s, fetched just now: the token was not issued by %s, or with a key it no longer publishes", reason, v.cfg.Issuer)
	}
	return k.pub, nil
}

// refresh fetches the key set, joining a fetch already in flight.
func (v *Validator) refresh(ctx context.Context) (*keySet, error) {
	v.mu.Lock()
	f := v.flight
	if f == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		v.flight = f
		v.lastFetch = v.cfg.Now()
		go v.run(fctx, f)
	}
	f.waiters++
	v.mu.Unlock()

	select {
	case <-f.done:
		return f.set, f.err
	case <-ctx.Done():
		v.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			// Nobody wants it any more: stop it, and let the next caller
			// start afresh rather than join a cancelled fetch.
			f.cancel()
			if v.flight == f {
				v.flight = nil
			}
		}
		v.mu.Unlock()
		return nil, fmt.Errorf("gave up waiting for %s's keys: %w", v.cfg.Issuer, ctx.Err())
	}
}

// run performs a flight's fetch and publishes its outcome.
func (v *Validator) run(ctx context.Context, f *flight) {
	defer f.cancel()
	set, err := v.fetchKeySet(ctx)
	abandoned := ctx.Err() != nil
	v.mu.Lock()
	switch {
	case err == nil:
		v.set, v.failed, v.lastErr = set, time.Time{}, nil
	case !abandoned:
		v.failed, v.lastErr = v.cfg.Now(), err
	}
	if v.flight == f {
		v.flight = nil
	}
	f.set, f.err = set, err
	v.mu.Unlock()
	close(f.done)
}

// fetchKeySet discovers the key set's URL if need be, then fetches it.
func (v *Validator) fetchKeySet(ctx context.Context) (*keySet, error) {
	v.mu.Lock()
	jwksURL := v.jwksURL
	v.mu.Unlock()
	if jwksURL == "" {
		var err error
		if jwksURL, err = v.discover(ctx); err != nil {
			return nil, err
		}
	}
	body, hdr, err := v.get(ctx, jwksURL, "key set")
	var keys []key
	if err == nil {
		if keys, err = parseJWKS(body); err != nil {
			err = fetchFailed(nil, "the key set at %s is unusable: %v%s", jwksURL, err, contentTypeHint(hdr))
		}
	}
	if v.cfg.JWKSURL == "" {
		// A discovered URL is remembered while it serves a key set; once
		// it fails, the next fetch asks the issuer's metadata again.
		v.mu.Lock()
		v.jwksURL = ""
		if err == nil {
			v.jwksURL = jwksURL
		}
		v.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	now := v.cfg.Now()
	return &keySet{keys: keys, url: jwksURL, fetched: now, expires: now.Add(cacheTTL(hdr))}, nil
}

// discover finds jwks_uri in the issuer's metadata. A document whose
// issuer is not the configured one is not used (RFC 8414 section 3.3): it
// would let one authorization server stand in for another.
func (v *Validator) discover(ctx context.Context) (string, error) {
	var problems []string
	for _, mu := range auth.MetadataURLs(v.cfg.Issuer) {
		body, hdr, err := v.get(ctx, mu, "metadata")
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			problems = append(problems, err.Error())
			continue
		}
		var meta struct {
			Issuer  *string `json:"issuer"`
			JWKSURI *string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			problems = append(problems, fmt.Sprintf("%s is not JSON metadata: %s%s", mu, jsonProblem(body, err), contentTypeHint(hdr)))
			continue
		}
		switch {
		case meta.Issuer == nil:
			problems = append(problems, fmt.Sprintf("%s names no issuer", mu))
			continue
		case *meta.Issuer != v.cfg.Issuer:
			problems = append(problems, fmt.Sprintf("%s is the metadata of issuer %q, not %q (if that is the same server, set the gateway's oauth issuer to exactly %q)", mu, quoteValue(*meta.Issuer), v.cfg.Issuer, quoteValue(*meta.Issuer)))
			continue
		case meta.JWKSURI == nil || *meta.JWKSURI == "":
			problems = append(problems, fmt.Sprintf("%s has no jwks_uri", mu))
			continue
		}
		if err := checkURL("jwks_uri", *meta.JWKSURI, "an https URL"); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", mu, err))
			continue
		}
		return *meta.JWKSURI, nil
	}
	return "", fetchFailed(nil, "cannot find %s's key set: %s; check the oauth issuer, or set jwks_url to the key set's URL", v.cfg.Issuer, strings.Join(problems, "; "))
}

// get fetches one document: at most fetchTimeout, at most
// MaxDocumentBytes, HTTP 200 only.
func (v *Validator) get(ctx context.Context, rawURL, what string) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, fetchFailed(err, "cannot fetch the %s at %q: %v", what, rawURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		cause := "is the issuer reachable from the gateway, and its address allowed by the SSRF guard?"
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cause = fmt.Sprintf("no answer within %v; the issuer is slow or unreachable", fetchTimeout)
		}
		return nil, nil, fetchFailed(err, "fetching the %s at %s failed: %v (%s)", what, rawURL, err, cause)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		switch {
		case resp.StatusCode == http.StatusNotFound:
			hint = " (nothing there: check the URL)"
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			hint = " (it must be public; is a proxy asking for credentials?)"
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			hint = " (a redirect the HTTP client would not follow)"
		case resp.StatusCode >= 500:
			hint = " (the issuer is failing; the gateway tries again later)"
		}
		return nil, nil, fetchFailed(nil, "fetching the %s at %s answered HTTP %d%s", what, rawURL, resp.StatusCode, hint)
	}
	if resp.ContentLength > MaxDocumentBytes {
		return nil, nil, fetchFailed(nil, "the %s at %s is %d bytes, over the %d-byte limit (is this the right URL?)", what, rawURL, resp.ContentLength, MaxDocumentBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, nil, fetchFailed(err, "reading the %s at %s failed: %v", what, rawURL, err)
	}
	if len(body) > MaxDocumentBytes {
		return nil, nil, fetchFailed(nil, "the %s at %s is over the %d-byte limit (is this the right URL?)", what, rawURL, MaxDocumentBytes)
	}
	return body, resp.Header, nil
}

// contentTypeHint mentions a content type that is not JSON.
func contentTypeHint(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return ""
	}
	return fmt.Sprintf(" (served as %q, not JSON)", quoteValue(ct))
}

// cacheTTL is how long a key set may be used: Cache-Control max-age,
// clamped to minTTL..maxTTL; no-store and no-cache mean minTTL (the
// gateway cannot fetch keys for every token); default defaultTTL.
func cacheTTL(h http.Header) time.Duration {
	ttl := time.Duration(-1)
	for _, cc := range h.Values("Cache-Control") {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return minTTL
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if err != nil || n < 0 {
					continue
				}
				if n > int64(maxTTL/time.Second) {
					n = int64(maxTTL / time.Second)
				}
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	if ttl < 0 {
		return defaultTTL
	}
	return min(max(ttl, minTTL), maxTTL)
}
