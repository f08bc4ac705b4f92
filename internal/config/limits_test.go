package config

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestCountJSONFors: the for expressions of JSON template strings get
// their collections counted; keys, escaped templates, strings without a
// for expression and templates that do not parse stay as written.
func TestCountJSONFors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": "${[for x in local.n : x]}"}`, `{"a": "${[for x in for(local.n) : x]}"}`},
		{`{"a": "${[for a in local.n : [for b in local.m : a]]}"}`, `{"a": "${[for a in for(local.n) : [for b in for(local.m) : a]]}"}`},
		{`{"a": "${[for a in [for b in local.m : b] : a]}"}`, `{"a": "${[for a in for([for b in for(local.m) : b]) : a]}"}`},
		{`{"a": "%{for x in local.n}${x}%{endfor}"}`, `{"a": "%{for x in for(local.n)}${x}%{endfor}"}`},
		{`{"a": "${[for x in for(local.n) : x]}"}`, `{"a": "${[for x in for(local.n) : x]}"}`},
		{`{"${[for x in local.n : x]}": 1}`, `{"${[for x in local.n : x]}": 1}`},
		{`{"a": "$${[for x in local.n : x]}"}`, `{"a": "$${[for x in local.n : x]}"}`},
		{`{"a": "for ${x}"}`, `{"a": "for ${x}"}`},
		{`{"a": "${[for x in : x]}"}`, `{"a": "${[for x in : x]}"}`},
		{`{"a": ["\"<", "${[for x in local.n : \"<${x}>\"]}"]}`, `{"a": ["\"<", "${[for x in for(local.n) : \"<${x}>\"]}"]}`},
		{`{"a": "${[for x in local.n : x]}`, `{"a": "${[for x in local.n : x]}`},
	}
	for _, tc := range cases {
		out, _ := countJSONFors([]byte(tc.in))
		if got := string(out); got != tc.want {
			t.Errorf("countJSONFors(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestJSONForBudget: a nexus.hcl.json is held to the same budget of for
// expressions as a nexus.hcl, and one within it still evaluates.
func TestJSONForBudget(t *testing.T) {
	_, err := loadOne(t, "nexus.hcl.json", `{
  "locals": {
    "n": "${range(1000)}",
    "big": "${[for a in local.n : [for b in local.n : a * b]]}"
  }
}`, nil)
	if err == nil {
		t.Fatal("loaded")
	}
	golden(t, "json_for_nested", errText(err))

	cfg := mustLoad(t, "nexus.hcl.json", `{
  "locals": {"names": ["a", "b"]},
  "server": {"t": {"stdio": {"command": "x", "args": ["${join(\",\", [for s in local.names : upper(s)])}", "%{for s in local.names}<${s}>%{endfor}"]}}}
}`, nil)
	if got := cfg.Server("t").Command; !reflect.DeepEqual(got, []string{"x", "A,B", "<a><b>"}) {
		t.Errorf("args %q", got)
	}
}

// FuzzCountJSONFors: whatever the input, countJSONFors does not panic,
// and it turns valid JSON into valid JSON with the same shape.
func FuzzCountJSONFors(f *testing.F) {
	for _, s := range []string{
		`{"a": "${[for x in local.n : x]}"}`,
		`{"a": ["%{for x in l}${x}%{endfor}", {"${for}": "${[for a in [for b in m : b] : a]}"}]}`,
		`{"a": "\u0024{[for x in l : \"\\\"\"]}"}`,
		`["${[for x in`, `"`, `{"a":"\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		out, ins := countJSONFors(data)
		for _, in := range ins {
			if text := string(out[in.at : in.at+in.n]); text != forCounter+"(" && text != ")" {
				t.Fatalf("inserted %q", text)
			}
		}
		if p := unshift(hcl.Pos{Byte: len(out), Line: -1}, ins); p.Byte != len(data) {
			t.Fatalf("the end of the new text maps to %d, want %d", p.Byte, len(data))
		}
		var in, got any
		if json.Unmarshal(data, &in) != nil {
			return
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("valid JSON became invalid: %v\n in %s\nout %s", err, data, out)
		}
		if !sameShape(in, got) {
			t.Fatalf("the shape changed:\n in %s\nout %s", data, out)
		}
	})
}

// sameShape compares two decoded JSON values, strings by kind only.
func sameShape(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !sameShape(v, w) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !sameShape(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		_, ok := b.(string)
		return ok
	}
	return reflect.DeepEqual(a, b)
}
