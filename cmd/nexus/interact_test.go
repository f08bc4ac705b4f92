package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// scripted answers a console's questions from a list, as a person would
// type them; io.EOF when the list runs out (the terminal closed).
type scripted struct {
	answers []string
	out     *bytes.Buffer
}

func (s *scripted) readLine(ctx context.Context, prompt string) (string, error) {
	s.out.WriteString(prompt)
	if len(s.answers) == 0 {
		return "", io.EOF
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	s.out.WriteString(a + "\n")
	return a, nil
}

func scriptedConsole(answers ...string) (*console, *bytes.Buffer) {
	var out bytes.Buffer
	return &console{out: &out, lines: &scripted{answers: answers, out: &out}}, &out
}

// A schema with every primitive of the 2025-11-25 form schema, in an order
// that is not alphabetical: the person is asked in the server's order.
const everyField = `{"type":"object","properties":{
 "name":{"type":"string","title":"Name","description":"Your name.","minLength":2},
 "email":{"type":"string","format":"email"},
 "age":{"type":"integer","minimum":0,"maximum":150},
 "ratio":{"type":"number","default":0.5},
 "subscribe":{"type":"boolean","default":false},
 "color":{"type":"string","enum":["red","green"],"enumNames":["Red","Green"]},
 "size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}],"default":"l"},
 "plain":{"type":"string","enum":["a","b"]},
 "tags":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1},
 "langs":{"type":"array","items":{"anyOf":[{"const":"go","title":"Go"},{"const":"rs","title":"Rust"}]},"maxItems":1},
 "note":{"type":"string"}
},"required":["name","email","age","color","tags"]}`

func TestElicitFormEveryType(t *testing.T) {
	con, out := scriptedConsole(
		"",    // name: required, asked again
		"A",   // too short
		"Ada", // ok
		"not-an-email", "ada@example.com",
		"old", "200", "36", // not a number, over the maximum, ok
		"", // ratio: the default
		"y",
		"Green",         // by title
		"",              // size: the default "l"
		"2",             // plain: by number
		"x, 3",          // tags: value and number
		"go,rs", "Rust", // over maxItems, then by title
		"", // note: optional, left out
	)
	res, err := con.elicitForm(context.Background(), "ts", &mcp.ElicitParams{Message: "Tell me", RequestedSchema: json.RawMessage(everyField)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "Ada", "email": "ada@example.com", "age": int64(36), "ratio": 0.5, "subscribe": true,
		"color": "green", "size": "l", "plain": "b", "tags": []any{"x", "z"}, "langs": []any{"rs"},
	}
	if res.Action != "accept" || !reflect.DeepEqual(res.Content, want) {
		t.Fatalf("got %s %#v\nwant %#v\n%s", res.Action, res.Content, want, out)
	}
	for _, s := range []string{"Name is required.", "Enter at least 2 characters.", "Enter an email address", "Enter a whole number.",
		"at most 150", "Choose at most 1.", "1) Red [red]", "2) Large [l]", "[l] > ", "[0.5] > "} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the form did not say %q:\n%s", s, out)
		}
	}
	// The order of the questions is the schema's.
	if strings.Index(out.String(), "Name*") > strings.Index(out.String(), "email*") || strings.Index(out.String(), "ratio") > strings.Index(out.String(), "subscribe") {
		t.Errorf("fields asked out of order:\n%s", out)
	}
}

func TestElicitFormStops(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	for _, tc := range []struct {
		answers []string
		action  string
	}{
		{[]string{"/decline"}, "decline"},
		{[]string{"/cancel"}, "cancel"},
		{nil, "cancel"}, // the terminal closed mid-form
	} {
		con, out := scriptedConsole(tc.answers...)
		res, err := con.elicitForm(context.Background(), "ts", &mcp.ElicitParams{Message: "m", RequestedSchema: schema})
		if err != nil || res.Action != tc.action || res.Content != nil {
			t.Errorf("%q: got %+v, %v\n%s", tc.answers, res, err, out)
		}
	}
}

func TestElicitFormRejectsBadSchema(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"o":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		`{"type":"array"}`,
	} {
		con, _ := scriptedConsole()
		_, err := con.elicitForm(context.Background(), "ts", &mcp.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(s)})
		var rerr *mcp.RPCError
		if err == nil || !asRPC(err, &rerr) || rerr.Code != -32602 {
			t.Errorf("%s: got %v, want invalid params", s, err)
		}
	}
}

func asRPC(err error, target **mcp.RPCError) bool {
	r, ok := err.(*mcp.RPCError)
	*target = r
	return ok
}

func TestElicitURL(t *testing.T) {
	p := &mcp.ElicitParams{Mode: "url", Message: "Set your key", URL: "http://keys.example.com/set?id=1", ElicitationID: "e1"}
	con, out := scriptedConsole("")
	res, err := con.elicitURL(context.Background(), "ts", p)
	if err != nil || res.Action != "accept" || res.Content != nil {
		t.Fatalf("got %+v %v", res, err)
	}
	for _, s := range []string{"URL:  http://keys.example.com/set?id=1", "Host: keys.example.com", "not https", "does not open it"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("missing %q:\n%s", s, out)
		}
	}
	con, _ = scriptedConsole("n")
	if res, _ := con.elicitURL(context.Background(), "ts", p); res.Action != "decline" {
		t.Errorf("n: %+v", res)
	}
	con, _ = scriptedConsole()
	if res, _ := con.elicitURL(context.Background(), "ts", p); res.Action != "cancel" {
		t.Errorf("EOF: %+v", res)
	}
	con, _ = scriptedConsole()
	if _, err := con.elicitURL(context.Background(), "ts", &mcp.ElicitParams{Mode: "url", URL: "/relative"}); err == nil {
		t.Error("a relative URL was shown")
	}
}

func TestSampling(t *testing.T) {
	content, _ := json.Marshal(mcp.TextContent("Say hi\x1b]0;pwned\x07"))
	temp := 0.2
	p := &mcp.CreateMessageParams{
		Messages:     []mcp.SamplingMessage{{Role: "user", Content: content}},
		SystemPrompt: "Be brief.", MaxTokens: 64, Temperature: &temp,
		ModelPreferences: json.RawMessage(`{"hints":[{"name":"claude-3-5"}]}`),
	}
	con, out := scriptedConsole("Hi", "there", "")
	res, err := con.sample(context.Background(), "ts", p)
	if err != nil {
		t.Fatal(err)
	}
	var c mcp.Content
	if err := json.Unmarshal(res.Content, &c); err != nil || c.Text != "Hi\nthere" || res.Role != "assistant" || res.Model == "" {
		t.Fatalf("got %+v (%s)", res, res.Content)
	}
	for _, s := range []string{`Server "ts" asks for a model reply`, "max tokens: 64", "temperature: 0.2", "model hints: claude-3-5", "Be brief.", "[user]", "Say hi"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("missing %q:\n%s", s, out)
		}
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("an escape sequence reached the terminal: %q", out)
	}

	for _, answers := range [][]string{{""}, nil} { // declined; the terminal closed
		con, _ = scriptedConsole(answers...)
		_, err = con.sample(context.Background(), "ts", p)
		var rerr *mcp.RPCError
		if !asRPC(err, &rerr) || rerr.Code != -1 || !strings.HasPrefix(rerr.Message, "User rejected sampling request") {
			t.Errorf("%q: got %v, want the spec's refusal", answers, err)
		}
	}
}

func TestSamplingDenyWithoutTerminal(t *testing.T) {
	a := &app{sampling: samplingDeny, samplingChosen: true} // --sampling deny
	a.con = &console{out: io.Discard}
	a.conOnce.Do(func() {})
	_, err := a.samplingHandler("ts")(context.Background(), &mcp.CreateMessageParams{})
	var rerr *mcp.RPCError
	if !asRPC(err, &rerr) || rerr.Code != -1 || !strings.Contains(rerr.Message, "--sampling deny") {
		t.Fatalf("got %v", err)
	}
	// Denied by default (no terminal): the refusal does not cite a flag
	// nobody passed.
	a.samplingChosen = false
	_, err = a.samplingHandler("ts")(context.Background(), &mcp.CreateMessageParams{})
	if !asRPC(err, &rerr) || strings.Contains(rerr.Message, "--sampling deny") || !strings.Contains(rerr.Message, "no terminal") {
		t.Fatalf("defaulted: %v", err)
	}
	res, err := a.elicitationHandler("ts")(context.Background(), &mcp.ElicitParams{Message: "m"})
	if err != nil || res.Action != "decline" {
		t.Fatalf("elicitation without a terminal: %+v %v", res, err)
	}
}

func TestProgressRendering(t *testing.T) {
	total := 10.0
	bar := progressBar("ts.slow", mcp.Progress{Progress: 4, Total: &total, Message: "step 4\x1b[2J of 10"}, 80)
	if bar != "ts.slow [=========>              ]  40% step 4 of 10" {
		t.Errorf("bar: %q", bar)
	}
	if got := progressBar("ts.slow", mcp.Progress{Progress: 3}, 80); got != "ts.slow [3]" {
		t.Errorf("no total: %q", got)
	}
	long := progressBar("ts.slow", mcp.Progress{Progress: 1, Total: &total, Message: strings.Repeat("m", 200)}, 60)
	if n := len([]rune(long)); n > 59 || !strings.HasSuffix(long, "…") {
		t.Errorf("not cut to the width (%d): %q", n, long)
	}
	if got := progressText("ts.slow", mcp.Progress{Progress: 2.5, Total: &total}); got != "ts.slow: 2.5/10" {
		t.Errorf("text: %q", got)
	}
}

func TestProgressBarYieldsToQuestions(t *testing.T) {
	var out bytes.Buffer
	c := &console{out: &out, outTTY: true}
	c.setBar("bar 1")
	c.printLine("a log line")
	c.begin()
	c.setBar("bar 2") // not drawn while a question is on screen
	c.say("question? ")
	c.end()
	c.setBar("")
	want := "bar 1\r\x1b[Ka log line\nbar 1\r\x1b[Kquestion? bar 2\r\x1b[K"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
}

func TestFormatLog(t *testing.T) {
	got := formatLog("ts", mcp.LogMessage{Level: "warning", Logger: "db", Data: json.RawMessage(`"slow\nquery\u001b[31m"`)})
	if got != "[ts] warning db: slow ⏎ query" {
		t.Errorf("got %q", got)
	}
	got = formatLog("ts", mcp.LogMessage{Level: "error", Data: json.RawMessage(`{"code":7}`)})
	if got != `[ts] error: {"code":7}` {
		t.Errorf("got %q", got)
	}
	a := &app{logLevel: "warn"}
	var out bytes.Buffer
	a.con = &console{out: &out}
	a.conOnce.Do(func() {})
	a.onLog("ts", mcp.LogMessage{Level: "info", Data: json.RawMessage(`"hidden"`)})
	a.onLog("ts", mcp.LogMessage{Level: "critical", Data: json.RawMessage(`"shown"`)})
	if out.String() != "[ts] critical: shown\n" {
		t.Errorf("level filter: %q", out.String())
	}
}

func TestForTerminal(t *testing.T) {
	if got := forTerminal("short"); got != "short" {
		t.Errorf("%q", got)
	}
	long := strings.Repeat("line\n", 1000)
	got := forTerminal(long)
	if strings.Count(got, "\n") != termMaxLines || !strings.Contains(got, "(800 lines)") {
		t.Errorf("long text: %d lines, ending %q", strings.Count(got, "\n"), got[len(got)-120:])
	}
	wide := strings.Repeat("é", 100000) // one line, 200 KB
	got = forTerminal(wide)
	if !strings.Contains(got, "not shown on the terminal") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("wide line: %q", got[len(got)-150:])
	}
	if got := forTerminal("PNG\x00\x01\x02" + strings.Repeat("x", 100)); !strings.Contains(got, "binary") {
		t.Errorf("binary: %q", got)
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		`/call ts.echo message="hello world"`:  {"/call", "ts.echo", "message=hello world"},
		`/call ts.echo 'a "b" c' x\ y ""`:      {"/call", "ts.echo", `a "b" c`, "x y", ""},
		`/call ts.echo o={"k":\"v\"}`:          {"/call", "ts.echo", `o={k:"v"}`},
		`/call ts.echo o='{"k":"v"}'`:          {"/call", "ts.echo", `o={"k":"v"}`},
		"  /mcp   tools\t ts ":                 {"/mcp", "tools", "ts"},
		`/call ts.echo "quote \" and \\ here"`: {"/call", "ts.echo", `quote " and \ here`},
	} {
		got, err := splitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := splitWords(`/call "open`); err == nil {
		t.Error("an open quote was accepted")
	}
}

func TestSuggestions(t *testing.T) {
	if got := suggest.Nearest("/mpc", shellCommands); got != "/mcp" {
		t.Errorf("got %q", got)
	}
	if got := suggest.Nearest("testsrever", []string{"testserver", "github"}); got != "testserver" {
		t.Errorf("got %q", got)
	}
	if got := suggest.Nearest("zzzzzz", []string{"testserver"}); got != "" {
		t.Errorf("got %q", got)
	}
}

func TestFileURI(t *testing.T) {
	if got := fileURI("/tmp/a b"); got != "file:///tmp/a%20b" {
		t.Errorf("got %q", got)
	}
}

func TestShellCompleter(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"github": {"command": "gh"}, "gitlab": {"command": "gl"}}}`), "mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(cfg, host.Options{})
	defer h.Close()
	sh := &shell{a: &app{}, h: h, tools: map[string][]string{"github": {"create_issue", "close_issue"}},
		prompts: map[string][]string{}, resources: map[string][]string{"github": {"repo://a"}}}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"/m", []string{"/mcp "}},
		{"/mcp co", []string{"connect "}},
		{"/mcp connect git", []string{"github", "gitlab"}},
		{"/mcp connect github --a", []string{"--allow-all "}},
		{"/call gi", []string{"github.", "gitlab."}},
		{"/call github.c", []string{"github.close_issue", "github.create_issue"}},
		{"/call github.cr", []string{"github.create_issue "}},
		{"/call gitlab.", nil}, // not connected, nothing cached: no connecting on Tab
		{"/read github ", []string{"repo://a "}},
	} {
		head, got, tail := sh.complete(tc.line, len(tc.line))
		if !reflect.DeepEqual(got, tc.want) || tail != "" || !strings.HasPrefix(tc.line, head) {
			t.Errorf("%q: got %q %q %q, want %q", tc.line, head, got, tail, tc.want)
		}
	}
}
