package mcp

import (
	"encoding/json"
	"testing"
)

// rawMember finds a member of validated params without decoding them;
// params that are not an object (or null) are an error.
func TestRawMember(t *testing.T) {
	for _, c := range []struct {
		params, name, want string
		bad                bool
	}{
		{`{"mode":"url","message":"m"}`, "mode", `"url"`, false},
		{` {"message":"m"}`, "mode", ``, false},
		{`{"mode":1,"mode":"form"}`, "mode", `"form"`, false},
		{`null`, "mode", ``, false},
		{``, "mode", ``, false},
		{`{"a":1}`, "", ``, false},
		{`[1]`, "", ``, true},
		{`"x"`, "mode", ``, true},
	} {
		got, err := rawMember(json.RawMessage(c.params), c.name)
		if (err != nil) != c.bad || string(got) != c.want {
			t.Errorf("rawMember(%s, %q) = %s, %v; want %s (error: %v)", c.params, c.name, got, err, c.want, c.bad)
		}
	}
}
