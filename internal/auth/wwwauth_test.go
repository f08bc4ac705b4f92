package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestParseWWWAuthenticate(t *testing.T) {
	type ch = AuthChallenge
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		in      []string
		want    []ch
		wantErr bool
	}{
		{[]string{`Bearer`}, []ch{{Scheme: "Bearer", Params: p()}}, false},
		{[]string{`Bearer realm="example"`}, []ch{{Scheme: "Bearer", Params: p("realm", "example")}}, false},
		{[]string{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource",
                         scope="files:read"`}, []ch{{Scheme: "Bearer", Params: p("resource_metadata", "https://mcp.example.com/.well-known/oauth-protected-resource")}}, true}, // a raw newline is not OWS
		{[]string{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`},
			[]ch{{Scheme: "Bearer", Params: p("resource_metadata", "https://mcp.example.com/.well-known/oauth-protected-resource", "scope", "files:read")}}, false},
		{[]string{`Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://x/y", error_description="Additional file write permission required"`},
			[]ch{{Scheme: "Bearer", Params: p("error", "insufficient_scope", "scope", "files:read files:write user:profile", "resource_metadata", "https://x/y", "error_description", "Additional file write permission required")}}, false},
		// Several challenges in one field, token68 and params mixed (RFC 9110's example).
		{[]string{`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`},
			[]ch{{Scheme: "Newauth", Params: p("realm", "apps", "type", "1", "title", `Login to "apps"`)}, {Scheme: "Basic", Params: p("realm", "simple")}}, false},
		{[]string{`Basic abc==, Bearer scope=a`}, []ch{{Scheme: "Basic", Token68: "abc==", Params: p()}, {Scheme: "Bearer", Params: p("scope", "a")}}, false},
		{[]string{`Negotiate, Bearer`}, []ch{{Scheme: "Negotiate", Params: p()}, {Scheme: "Bearer", Params: p()}}, false},
		// Several fields.
		{[]string{`Basic realm="a"`, `bearer  ERROR = invalid_token ,, scope="x"`},
			[]ch{{Scheme: "Basic", Params: p("realm", "a")}, {Scheme: "bearer", Params: p("error", "invalid_token", "scope", "x")}}, false},
		// Empty list elements and whitespace.
		{[]string{` , ,Bearer realm="r" , `}, []ch{{Scheme: "Bearer", Params: p("realm", "r")}}, false},
		// Duplicate parameter: the first wins.
		{[]string{`Bearer scope="a", scope="b"`}, []ch{{Scheme: "Bearer", Params: p("scope", "a")}}, false},
		// Malformed.
		{[]string{`Bearer realm="unterminated`}, []ch{{Scheme: "Bearer", Params: p()}}, true},
		{[]string{`Bearer realm=`}, []ch{{Scheme: "Bearer", Token68: "realm=", Params: p()}}, false},
		{[]string{`="x"`}, nil, true},
		{[]string{`Bearer a b`}, []ch{{Scheme: "Bearer", Params: p()}}, true},
		{[]string{`Bearer realm="x" junk`}, []ch{{Scheme: "Bearer", Params: p("realm", "x")}}, true},
		{[]string{"Bearer realm=\"a\x01b\""}, []ch{{Scheme: "Bearer", Params: p()}}, true},
	}
	for _, tc := range cases {
		got, err := ParseWWWAuthenticate(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.wantErr)
		}
		if err != nil && !errors.Is(err, ErrMalformedChallenge) {
			t.Errorf("%q: error %v is not ErrMalformedChallenge", tc.in, err)
		}
		if tc.want == nil && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", tc.in, got, tc.want)
		}
	}
}

func TestParseWWWAuthenticateLimits(t *testing.T) {
	if _, err := ParseWWWAuthenticate([]string{strings.Repeat("a", MaxWWWAuthenticate+1)}); err == nil {
		t.Error("oversized header accepted")
	}
	many := strings.Repeat("Basic, ", 100)
	cs, err := ParseWWWAuthenticate([]string{many})
	if err == nil || len(cs) > maxChallenges {
		t.Errorf("%d challenges, err %v", len(cs), err)
	}
	var params []string
	for i := 0; i < 100; i++ {
		params = append(params, "p"+itoa(i)+"=v")
	}
	cs, err = ParseWWWAuthenticate([]string{"Bearer " + strings.Join(params, ", ")})
	if err == nil || len(cs) != 1 || len(cs[0].Params) > maxAuthParams {
		t.Errorf("params: %d, err %v", len(cs[0].Params), err)
	}
}

func TestBearerChallengeFromResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Add("WWW-Authenticate", `Basic realm="x"`)
	rec.Header().Add("WWW-Authenticate", `Bearer resource_metadata="https://a/b", scope="s1 s2"`)
	rec.WriteHeader(http.StatusUnauthorized)
	ch, ok := bearerChallenge(rec.Result().Header.Values("WWW-Authenticate"))
	if !ok || ch.Param("Resource_Metadata") != "https://a/b" || ch.Param("scope") != "s1 s2" {
		t.Errorf("got %#v %v", ch, ok)
	}
}

// FuzzWWWAuthenticate: the parser never panics, respects its limits, and
// what it parses survives a round trip through formatChallenges.
func FuzzWWWAuthenticate(f *testing.F) {
	for _, s := range []string{
		`Bearer`,
		`Bearer realm="example"`,
		`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`,
		`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y", error_description="more"`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		`Basic abc==, Bearer scope=a`,
		` , ,Bearer realm="r" , `,
		`Bearer realm="unterminated`,
		`Bearer a b`,
		"Bearer realm=\"\xff\\\"\"",
		`DPoP algs="ES256 PS256", error="use_dpop_nonce"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseWWWAuthenticate([]string{s})
		if len(s) > MaxWWWAuthenticate {
			if err == nil {
				t.Fatal("oversized input accepted")
			}
			return
		}
		if len(cs) > maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" || len(c.Params) > maxAuthParams || (c.Token68 != "" && len(c.Params) > 0) {
				t.Fatalf("bad challenge %#v", c)
			}
		}
		// Round trip: the parsed challenges, formatted, parse to the same.
		again, err2 := ParseWWWAuthenticate([]string{formatChallenges(cs)})
		if err2 != nil {
			t.Fatalf("re-parse of %q: %v", formatChallenges(cs), err2)
		}
		if len(cs) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(cs, again) {
			t.Fatalf("round trip of %q:\n %#v\n %#v", s, cs, again)
		}
	})
}
