package resource

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// wellKnown is RFC 9728's well-known path suffix.
const wellKnown = "/.well-known/oauth-protected-resource"

// MetadataURL is where RFC 9728 puts the Protected Resource Metadata of
// resource: the well-known path inserted between the host and the
// resource's own path (a terminating slash removed), the query kept. It is
// also where MCP clients look when a challenge does not name it. It
// returns "" for a string that is not an absolute URL.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	s := u.Scheme + "://" + u.Host + wellKnown + strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}

// metadata is the RFC 9728 document the gateway publishes.
type metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// MetadataHandler serves the gateway's Protected Resource Metadata (RFC
// 9728): its resource URL, its one authorization server, the scopes it
// requires, and that tokens go in the Authorization header only. Mount it
// at the path of MetadataURL(Resource). The document is public: any origin
// may read it, as browser-based MCP clients must.
func (v *Validator) MetadataHandler() http.Handler {
	doc, _ := json.MarshalIndent(metadata{
		Resource:               v.cfg.Resource,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
	}, "", "  ")
	doc = append(doc, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "the protected resource metadata is read with GET", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		if r.Method == http.MethodHead {
			return
		}
		w.Write(doc)
	})
}
