package pluginwire

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// TestGeneratedMatchesProto fails when the generated code is stale: the
// services, messages and fields of the public contract
// (sdk/plugin/proto/plugin.proto) must be the ones compiled into this
// package, which the host and the Go SDK speak. A .proto edited without
// `make proto` after it fails here. (Comments are not compared: they
// change no byte on the wire.)
func TestGeneratedMatchesProto(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testenv.Root(t), "sdk", "plugin", "proto", "plugin.proto"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := outline(string(src))
	if err != nil {
		t.Fatalf("sdk/plugin/proto/plugin.proto: %v", err)
	}
	got := generatedOutline(File_plugin_proto)
	if got != want {
		t.Errorf("the generated code is stale: run `make proto`.\nplugin.proto:\n%s\ngenerated:\n%s", want, got)
	}
	// The comparison notices a change on the wire: a field renumbered.
	const field = "bytes decision = 1;"
	if !strings.Contains(string(src), field) {
		t.Fatalf("plugin.proto no longer has %q; pick another field for this check", field)
	}
	changed, err := outline(strings.Replace(string(src), field, "bytes decision = 5;", 1))
	if err != nil || changed == got {
		t.Errorf("a renumbered field went unnoticed (%v)", err)
	}
}

// generatedOutline describes a compiled file as outline describes its
// source: one line per declaration, in source order.
func generatedOutline(fd protoreflect.FileDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n", fd.Package())
	for i := 0; i < fd.Services().Len(); i++ {
		s := fd.Services().Get(i)
		fmt.Fprintf(&b, "service %s\n", s.Name())
		for j := 0; j < s.Methods().Len(); j++ {
			m := s.Methods().Get(j)
			fmt.Fprintf(&b, "  rpc %s(%s%s) returns (%s%s)\n", m.Name(),
				streamWord(m.IsStreamingClient()), m.Input().Name(), streamWord(m.IsStreamingServer()), m.Output().Name())
		}
	}
	for i := 0; i < fd.Messages().Len(); i++ {
		m := fd.Messages().Get(i)
		fmt.Fprintf(&b, "message %s\n", m.Name())
		for j := 0; j < m.Fields().Len(); j++ {
			f := m.Fields().Get(j)
			var typ string
			switch {
			case f.IsMap():
				typ = "map<" + kindName(f.MapKey()) + "," + kindName(f.MapValue()) + ">"
			case f.Cardinality() == protoreflect.Repeated:
				typ = "repeated " + kindName(f)
			default:
				typ = kindName(f)
			}
			fmt.Fprintf(&b, "  %s %s = %d\n", typ, f.Name(), f.Number())
		}
	}
	return b.String()
}

func kindName(f protoreflect.FieldDescriptor) string {
	if f.Message() != nil {
		return string(f.Message().Name())
	}
	if f.Enum() != nil {
		return string(f.Enum().Name())
	}
	return f.Kind().String()
}

func streamWord(s bool) string {
	if s {
		return "stream "
	}
	return ""
}

// outline reads the subset of proto3 that plugin.proto uses (package,
// options, services of rpcs, messages of scalar, repeated and map fields)
// and describes it as generatedOutline does. Anything else is an error,
// so a .proto that grows past the subset fails loudly instead of being
// half compared.
func outline(src string) (string, error) {
	p := &protoParser{toks: tokenize(src)}
	var services, messages strings.Builder
	var pkg string
	for !p.done() {
		switch kw := p.next(); kw {
		case "syntax", "option":
			p.skipTo(";")
		case "package":
			pkg = p.next()
			p.expect(";")
		case "service":
			fmt.Fprintf(&services, "service %s\n", p.next())
			p.expect("{")
			for p.peek() != "}" && !p.done() {
				p.expect("rpc")
				name := p.next()
				p.expect("(")
				in := p.streamed()
				p.expect(")")
				p.expect("returns")
				p.expect("(")
				out := p.streamed()
				p.expect(")")
				p.expect(";")
				fmt.Fprintf(&services, "  rpc %s(%s) returns (%s)\n", name, in, out)
			}
			p.expect("}")
		case "message":
			fmt.Fprintf(&messages, "message %s\n", p.next())
			p.expect("{")
			for p.peek() != "}" && !p.done() {
				typ := p.next()
				switch typ {
				case "repeated":
					typ += " " + p.next()
				case "map":
					p.expect("<")
					k := p.next()
					p.expect(",")
					v := p.next()
					p.expect(">")
					typ = "map<" + k + "," + v + ">"
				}
				name := p.next()
				p.expect("=")
				num := p.next()
				p.expect(";")
				fmt.Fprintf(&messages, "  %s %s = %s\n", typ, name, num)
			}
			p.expect("}")
		default:
			return "", fmt.Errorf("unexpected %q at the top level", kw)
		}
		if p.err != nil {
			return "", p.err
		}
	}
	return "package " + pkg + "\n" + services.String() + messages.String(), nil
}

type protoParser struct {
	toks []string
	i    int
	err  error
}

func (p *protoParser) done() bool { return p.i >= len(p.toks) || p.err != nil }

func (p *protoParser) peek() string {
	if p.i >= len(p.toks) {
		return ""
	}
	return p.toks[p.i]
}

func (p *protoParser) next() string {
	t := p.peek()
	if t == "" && p.err == nil {
		p.err = fmt.Errorf("unexpected end of file")
	}
	p.i++
	return t
}

func (p *protoParser) expect(tok string) {
	if got := p.next(); got != tok && p.err == nil {
		p.err = fmt.Errorf("want %q, found %q (token %d)", tok, got, p.i)
	}
}

func (p *protoParser) skipTo(tok string) {
	for !p.done() && p.next() != tok {
	}
}

// streamed reads "[stream] Type".
func (p *protoParser) streamed() string {
	t := p.next()
	if t == "stream" {
		return "stream " + p.next()
	}
	return t
}

// tokenize splits proto source into identifiers (dotted names included),
// numbers, string literals and single punctuation marks, dropping
// comments and white space.
func tokenize(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return append(toks, "/*")
			}
			i += end + 4
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			toks = append(toks, src[i:min(j+1, len(src))])
			i = j + 1
		case unicode.IsSpace(rune(c)):
			i++
		case c == '_' || c == '.' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}
