package resource

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestMetadataURL(t *testing.T) {
	for resource, want := range map[string]string{
		"https://gw.example.com":                 "https://gw.example.com/.well-known/oauth-protected-resource",
		"https://gw.example.com/":                "https://gw.example.com/.well-known/oauth-protected-resource",
		"https://gw.example.com/mcp":             "https://gw.example.com/.well-known/oauth-protected-resource/mcp",
		"https://gw.example.com/mcp/":            "https://gw.example.com/.well-known/oauth-protected-resource/mcp",
		"https://gw.example.com:8443/public/mcp": "https://gw.example.com:8443/.well-known/oauth-protected-resource/public/mcp",
		"https://gw.example.com/a%20b":           "https://gw.example.com/.well-known/oauth-protected-resource/a%20b",
		"https://gw.example.com/mcp?tenant=x":    "https://gw.example.com/.well-known/oauth-protected-resource/mcp?tenant=x",
		"http://127.0.0.1:8080/mcp":              "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
		"http://[::1]:8080":                      "http://[::1]:8080/.well-known/oauth-protected-resource",
		"not a url":                              "",
		"/mcp":                                   "",
		"%zz":                                    "",
	} {
		if got := MetadataURL(resource); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", resource, got, want)
		}
	}
}

func TestMetadataHandler(t *testing.T) {
	v, err := New(Config{
		Resource: "https://gw.example.com/mcp",
		Issuer:   "https://login.example.com/tenant1",
		Scopes:   []string{"mcp:tools", "mcp:read"},
		Agents:   map[string]string{"*": "claude"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := v.MetadataHandler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 "https://gw.example.com/mcp",
		"authorization_servers":    []any{"https://login.example.com/tenant1"},
		"scopes_supported":         []any{"mcp:tools", "mcp:read"},
		"bearer_methods_supported": []any{"header"},
	}
	if a, b := mustJSON(doc), mustJSON(want); a != b {
		t.Fatalf("document\n%s\nwant\n%s", a, b)
	}

	// Without scopes, scopes_supported is left out.
	v2, _ := New(Config{Resource: "https://gw.example.com", Issuer: "https://login.example.com", Agents: map[string]string{"*": "a"}})
	rec = httptest.NewRecorder()
	v2.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	doc = nil
	json.Unmarshal(rec.Body.Bytes(), &doc)
	if _, ok := doc["scopes_supported"]; ok || doc["resource"] != "https://gw.example.com" {
		t.Fatalf("document %v", doc)
	}

	for method, code := range map[string]int{"HEAD": 200, "OPTIONS": 204, "POST": 405, "DELETE": 405} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
		if rec.Code != code {
			t.Errorf("%s: %d, want %d", method, rec.Code, code)
		}
		if method == "HEAD" && rec.Body.Len() != 0 {
			t.Errorf("HEAD has a body")
		}
		if code == 405 && rec.Header().Get("Allow") == "" {
			t.Errorf("%s: no Allow", method)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}
