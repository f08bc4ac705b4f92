package resource_test

import (
	"fmt"

	"github.com/nexus-mcp/nexus/internal/gateway/internal/resource"
)

// The metadata of a gateway whose MCP endpoint has a path lives under the
// well-known prefix followed by that path; one at the root has the prefix
// alone.
func ExampleMetadataURL() {
	fmt.Println(resource.MetadataURL("https://gw.example.com/mcp"))
	fmt.Println(resource.MetadataURL("https://gw.example.com"))
	// Output:
	// https://gw.example.com/.well-known/oauth-protected-resource/mcp
	// https://gw.example.com/.well-known/oauth-protected-resource
}

// A refusal becomes the challenge of a 401 or 403 response, pointing the
// client at the metadata.
func ExampleError_WWWAuthenticate() {
	e := &resource.Error{Status: 401, Code: "invalid_token", Description: `the access token's key id "k9" is unknown`}
	fmt.Println(e.Status, e.WWWAuthenticate(resource.MetadataURL("https://gw.example.com/mcp")))
	// Output:
	// 401 Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's key id \"k9\" is unknown"
}
