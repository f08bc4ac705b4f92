package testserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Resource URIs.
const (
	uriReadme    = "file:///readme.txt"
	uriConfig    = "file:///config.json"
	uriUsers     = "file:///data/users.csv"
	uriLogo      = "file:///logo.png"
	templateUser = "file:///users/{id}"
)

const readmeText = `Nexus test server
=================

This is file:///readme.txt, a sample text resource served by the built-in
MCP test server (nexus testserver). Hosts use it to check resources/list
and resources/read. The server also offers file:///config.json,
file:///data/users.csv, the binary file:///logo.png and the template
file:///users/{id}.
`

const configJSON = `{
  "name": "nexus-testserver",
  "version": "1.0.0",
  "features": {"tools": true, "resources": true, "prompts": true, "logging": true},
  "limits": {"maxConnections": 10, "timeoutSeconds": 30}
}
`

type user struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Role  string `json:"role"`
}

// users are the rows of file:///data/users.csv and the known ids of
// file:///users/{id}.
var users = []user{
	{"1", "Alice Smith", "alice@example.com", "admin"},
	{"2", "Bob Jones", "bob@example.com", "user"},
	{"3", "Carol White", "carol@example.com", "user"},
	{"4", "Dave Brown", "dave@example.com", "viewer"},
}

var usersCSV = func() string {
	var b strings.Builder
	b.WriteString("id,name,email,role\n")
	for _, u := range users {
		b.WriteString(u.ID + "," + u.Name + "," + u.Email + "," + u.Role + "\n")
	}
	return b.String()
}()

// logoPNGBase64 is a 2x2 PNG in one colour (80 bytes).
const logoPNGBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAF0lEQVR42mLRztnAwMDAxAAGgAAAAP//DyMBTnDsyZoAAAAASUVORK5CYII="

var logoPNG, _ = base64.StdEncoding.DecodeString(logoPNGBase64)

// toneWAVBase64 is 10 ms of a square wave, 8 kHz mono 8-bit PCM WAV.
var toneWAVBase64 = base64.StdEncoding.EncodeToString(tinyWAV())

func tinyWAV() []byte {
	const rate, samples = 8000, 80
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	le(uint32(16))   // fmt chunk size
	le(uint16(1))    // PCM
	le(uint16(1))    // mono
	le(uint32(rate)) // sample rate
	le(uint32(rate)) // byte rate
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	b.WriteString("data")
	le(uint32(samples))
	for i := range samples {
		if i/10%2 == 0 {
			b.WriteByte(0xa0)
		} else {
			b.WriteByte(0x60)
		}
	}
	return b.Bytes()
}

func size(n int) *int64 { v := int64(n); return &v }

func textResource(uri, mime, text string) mcp.ResourceHandler {
	res := &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, MimeType: mime, Text: text}}}
	return func(context.Context, *mcp.ServerSession, string) (*mcp.ReadResourceResult, error) {
		return res, nil
	}
}

func addResources(s *mcp.Server) {
	s.AddResource(mcp.Resource{
		URI: uriReadme, Name: "README", Title: "README",
		Description: "A plain-text README describing the test server.",
		MimeType:    "text/plain", Size: size(len(readmeText)),
	}, textResource(uriReadme, "text/plain", readmeText))
	s.AddResource(mcp.Resource{
		URI: uriConfig, Name: "Configuration", Title: "Configuration",
		Description: "A small JSON configuration document.",
		MimeType:    "application/json", Size: size(len(configJSON)),
	}, textResource(uriConfig, "application/json", configJSON))
	s.AddResource(mcp.Resource{
		URI: uriUsers, Name: "Users Data", Title: "Users Data",
		Description: "A CSV table of users (id, name, email, role).",
		MimeType:    "text/csv", Size: size(len(usersCSV)),
	}, textResource(uriUsers, "text/csv", usersCSV))

	logo := &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uriLogo, MimeType: "image/png", Blob: logoPNGBase64}}}
	s.AddResource(mcp.Resource{
		URI: uriLogo, Name: "Logo", Title: "Logo",
		Description: "A tiny PNG image, served as a base64 blob.",
		MimeType:    "image/png", Size: size(len(logoPNG)),
	}, func(context.Context, *mcp.ServerSession, string) (*mcp.ReadResourceResult, error) {
		return logo, nil
	})

	s.AddResourceTemplate(mcp.ResourceTemplate{
		URITemplate: templateUser, Name: "user", Title: "User record",
		Description: "One user as a JSON object. Ids 1-4 are the rows of file:///data/users.csv; " +
			"any other id (without '/') gets a generated guest record.",
		MimeType: "application/json",
	}, readUser)
}

func readUser(ctx context.Context, s *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
	id := mcp.TemplateVars(templateUser, uri)["id"]
	if id == "" || strings.Contains(id, "/") {
		return nil, &mcp.RPCError{Code: -32002, Message: "resource not found: " + uri + " (a user id is one path segment)"}
	}
	u := user{ID: id, Name: "User " + id, Email: "user" + id + "@example.com", Role: "guest"}
	for _, known := range users {
		if known.ID == id {
			u = known
			break
		}
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, MimeType: "application/json", Text: string(b)}}}, nil
}
