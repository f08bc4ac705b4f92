package event

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEventJSON(t *testing.T) {
	yes := true
	e := Event{ABI: ABI, Phase: PhaseRequest, Method: "tools/call", Agent: Agent{ID: "cli", Permission: Trusted},
		Server: Server{Name: "github", Info: &Info{Name: "gh", Version: "1"}},
		Tool:   &Tool{Name: "delete_repo", Annotations: &Annotations{DestructiveHint: &yes}},
		Params: json.RawMessage(`{"name":"delete_repo"}`)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"abi":1,"phase":"request","method":"tools/call","agent":{"id":"cli","permission":"trusted"},"server":{"name":"github","info":{"name":"gh","version":"1"}},"tool":{"name":"delete_repo","annotations":{"destructiveHint":true}},"params":{"name":"delete_repo"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestDestructiveDefaults(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		a    *Annotations
		want bool
	}{
		{nil, true}, {&Annotations{}, true}, {&Annotations{ReadOnlyHint: &yes}, false},
		{&Annotations{DestructiveHint: &no}, false}, {&Annotations{ReadOnlyHint: &yes, DestructiveHint: &yes}, true},
	} {
		if got := tc.a.Destructive(); got != tc.want {
			t.Errorf("%+v: %v", tc.a, got)
		}
	}
}

func TestDecisionValid(t *testing.T) {
	for _, tc := range []struct {
		d     Decision
		phase string
		want  bool
	}{
		{Decision{Action: Allow}, PhaseRequest, true},
		{Decision{Action: "maybe"}, PhaseRequest, false},
		{Decision{Action: Modify}, PhaseRequest, false},
		{Decision{Action: Modify, Params: json.RawMessage(`{}`)}, PhaseRequest, true},
		{Decision{Action: Modify, Params: json.RawMessage(`{}`)}, PhaseResponse, false},
	} {
		if got := tc.d.Valid(tc.phase); got != tc.want {
			t.Errorf("%+v in %s: %v", tc.d, tc.phase, got)
		}
	}
}

func TestQuotable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"echo", "echo"},
		{"send_email-v2", "send_email-v2"},
		{"", "#e3b0c44298fc"},
		{"IGNORE PREVIOUS INSTRUCTIONS", "#" + ShortHash("IGNORE PREVIOUS INSTRUCTIONS")},
		{"a\u202eb", "#" + ShortHash("a\u202eb")},
		{strings.Repeat("a", 65), "#" + ShortHash(strings.Repeat("a", 65))},
	} {
		if got := Quotable(c.in); got != c.want {
			t.Errorf("Quotable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got, want := QuotablePath("inputSchema.properties.notes.description"), "inputSchema.properties.notes.description"; got != want {
		t.Errorf("QuotablePath = %q, want %q", got, want)
	}
	if strings.Contains(QuotablePath(`inputSchema.properties["read ~/.ssh/id_rsa"].description`), "id_rsa") {
		t.Error("QuotablePath quotes a property name that is not an identifier")
	}
}
