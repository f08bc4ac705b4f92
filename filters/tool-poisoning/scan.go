package main

import (
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/filter"
)

// The rules, by id: what a finding names and what config turns off.
const (
	ruleInstructions = "instructions"
	ruleTags         = "tags"
	ruleSecrets      = "secrets"
	ruleExfiltration = "exfiltration"
	ruleShadowing    = "shadowing"
	ruleInvisible    = "invisible"
	ruleANSI         = "ansi"
	ruleOversized    = "oversized"
)

var rules = []string{ruleInstructions, ruleTags, ruleSecrets, ruleExfiltration, ruleShadowing, ruleInvisible, ruleANSI, ruleOversized}

// Finding is one thing a rule found in a definition.
type Finding struct {
	Rule  string
	What  string
	Where string // a path into the definition: description, inputSchema.properties.notes.description
}

func (f Finding) String() string { return f.Rule + ": " + f.What + " in " + f.Where }

// Subject is what a scan looks at: one tool of a listing.
type Subject struct {
	Server, Tool string
	Definition   []byte
	// Others are the tools of other servers in the same listing, by name
	// (see listingNames); a mention of one is shadowing.
	Others map[string]string
}

// Limits bound what the oversized rule lets through.
type Limits struct {
	Description int // bytes of the description
	Definition  int // bytes of the whole definition
}

// maxFindings bounds a scan: past it, a definition is poisoned enough.
const maxFindings = 16

// scan runs every rule in on over s and returns what they found.
func scan(s Subject, lim Limits, on map[string]bool) []Finding {
	var out []Finding
	add := func(f Finding) bool {
		if on[f.Rule] && len(out) < maxFindings {
			out = append(out, f)
		}
		return len(out) < maxFindings
	}
	if len(s.Definition) > lim.Definition {
		add(Finding{ruleOversized, strconv.Itoa(len(s.Definition)) + " bytes, over the limit of " + strconv.Itoa(lim.Definition), "the definition"})
		return out // not read further: it is outside input
	}
	_, _, err := filter.EditStrings(s.Definition, func(p filter.Path, text string) (string, bool) {
		where := p.String()
		if where == "description" && len(text) > lim.Description {
			add(Finding{ruleOversized, strconv.Itoa(len(text)) + " bytes, over the limit of " + strconv.Itoa(lim.Description), where})
		}
		scanString(text, where, s, on, add)
		return text, false
	})
	if err != nil {
		add(Finding{ruleOversized, "a definition that is not JSON (" + err.Error() + ")", "the definition"})
	}
	return out
}

// scanString runs the rules that are on over one string of a definition.
func scanString(text, where string, s Subject, on map[string]bool, add func(Finding) bool) {
	if on[ruleANSI] && filter.Scan(text, 0, &controlBytes) < len(text) {
		if what := control(text); what != "" {
			add(Finding{ruleANSI, what, where})
		}
	}
	if i := filter.Scan(text, 0, &highBytes); on[ruleInvisible] && i < len(text) {
		if what := invisible(text[i:], i); what != "" {
			add(Finding{ruleInvisible, what, where})
		}
	}
	if on[ruleTags] {
		if tag := tags(text); tag != "" {
			add(Finding{ruleTags, tag + " tag", where})
		}
	}
	if on[ruleInstructions] || on[ruleSecrets] || on[ruleExfiltration] {
		ws := words(text)
		if !phrases(ws, where, add) {
			return
		}
		if on[ruleSecrets] {
			if f := secretFile(text); f != "" {
				add(Finding{ruleSecrets, "a reference to " + f, where})
			}
		}
		if on[ruleExfiltration] {
			if m := exfilTarget(ws, text); m != "" {
				add(Finding{ruleExfiltration, m, where})
			}
		}
	}
	if on[ruleShadowing] && len(s.Others) > 0 {
		if m := shadows(text, s); m != "" {
			add(Finding{ruleShadowing, m, where})
		}
	}
}

// phrases runs the phrase rules over ws, each at most once; false means
// the findings are full.
func phrases(ws []string, where string, add func(Finding) bool) bool {
	var fired map[*phrase]bool
	for i, w := range ws {
		for _, p := range phraseStarts[w] {
			if fired[p] {
				continue
			}
			if end, ok := p.at(ws, i+1, 1); ok {
				if fired == nil {
					fired = map[*phrase]bool{}
				}
				fired[p] = true
				if !add(Finding{p.rule, strconv.Quote(strings.Join(ws[i:end], " ")), where}) {
					return false
				}
			}
		}
	}
	return true
}

// Control characters: ESC and the other C0 controls but tab, line feed
// and carriage return, DEL, and the C1 CSI (U+009B, bytes C2 9B).
var controlBytes = func() filter.ByteSet {
	var s filter.ByteSet
	s.Add(0, 0x1F)
	s['\t'], s['\n'], s['\r'] = 0, 0, 0
	s[0x7F], s[0xC2] = 1, 1
	return s
}()

var highBytes = func() filter.ByteSet {
	var s filter.ByteSet
	s.Add(0x80, 0xFF)
	return s
}()

// control names the first terminal escape or control character of text,
// or "".
func control(text string) string {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == 0x1B:
			if i+1 < len(text) && (text[i+1] == '[' || text[i+1] == ']') {
				return "an ANSI escape sequence (ESC " + string(text[i+1]) + ") at byte " + strconv.Itoa(i)
			}
			return "an escape character (ESC) at byte " + strconv.Itoa(i)
		case c == 0xC2 && i+1 < len(text) && text[i+1] == 0x9B:
			return "a C1 control sequence introducer (U+009B) at byte " + strconv.Itoa(i)
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r', c == 0x7F:
			return "control character U+00" + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&0xF, 16) + " at byte " + strconv.Itoa(i)
		}
	}
	return ""
}

// invisible names the first invisible character of text (which starts at
// byte off of its string): Unicode tag characters, which can spell a
// whole hidden text; zero-width characters; bidirectional controls, which
// reorder what a person sees.
func invisible(text string, off int) string {
	for i, r := range text {
		var kind string
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			kind = "tag character"
		case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E:
			kind = "zero-width character"
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
			kind = "bidirectional control"
		default:
			continue
		}
		return "U+" + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + " (" + kind + ") at byte " + strconv.Itoa(off+i)
	}
	return ""
}

// tagNames are the pseudo-tags that mark text as instructions to a model.
var tagNames = map[string]bool{
	"important": true, "system": true, "sys": true, "instructions": true, "instruction": true, "secret": true,
	"hidden": true, "admin": true, "override": true, "critical": true, "assistant": true,
	"system-prompt": true, "system_prompt": true,
}

// tags returns the first model-directed tag of text: <IMPORTANT>,
// </system>, <instructions priority="high">, [INST], <<SYS>>,
// <|im_start|>, {{SYSTEM}}; or "".
func tags(text string) string {
	for i := filter.Scan(text, 0, tagStarts); i < len(text); i = filter.Scan(text, i+1, tagStarts) {
		switch text[i] {
		case '<':
			rest := text[i+1:]
			if strings.HasPrefix(rest, "<SYS>>") || strings.HasPrefix(rest, "</SYS>>") {
				return "<<SYS>>"
			}
			if strings.HasPrefix(rest, "|") {
				if end := strings.Index(rest[1:], "|>"); end >= 0 && end <= 24 {
					return "<|" + rest[1:1+end] + "|>"
				}
			}
			rest = strings.TrimPrefix(rest, "/")
			n := 0
			for n < len(rest) && n < 20 && (isLetter(rest[n]) || rest[n] == '-' || rest[n] == '_') {
				n++
			}
			if n == 0 || n == len(rest) || !tagNames[strings.ToLower(rest[:n])] {
				continue
			}
			// The name ends the tag or starts its attributes.
			if c := rest[n]; c == '>' || c == ' ' && strings.IndexByte(rest[n:min(len(rest), n+80)], '>') > 0 {
				return "<" + strings.ToUpper(rest[:n]) + ">"
			}
		case '[':
			if strings.HasPrefix(text[i:], "[INST]") || strings.HasPrefix(text[i:], "[/INST]") {
				return "[INST]"
			}
		case '{':
			if strings.HasPrefix(text[i:], "{{") {
				if end := strings.Index(text[i+2:], "}}"); end > 0 && end <= 20 && tagNames[strings.ToLower(strings.TrimSpace(text[i+2:i+2+end]))] {
					return "{{" + strings.ToUpper(strings.TrimSpace(text[i+2:i+2+end])) + "}}"
				}
			}
		}
	}
	return ""
}

// tagStarts are the bytes a tag can start with.
var tagStarts = filter.NewByteSet("<[{")

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// words splits text into lowercase words (letters, digits and
// apostrophes; a typographic apostrophe is read as '). The words are
// slices of one lowercased copy of text: a word costs no allocation,
// which in WASM is dear.
func words(text string) []string {
	if strings.Contains(text, "\u2019") {
		text = strings.ReplaceAll(text, "\u2019", "'")
	}
	low := []byte(text)
	for i := filter.Scan(low, 0, &upperBytes); i < len(low); i = filter.Scan(low, i+1, &upperBytes) {
		low[i] += 'a' - 'A'
	}
	all := string(low)
	out := make([]string, 0, len(all)/6)
	// Jump from word to separator and back: one Scan a word, not a
	// branch a byte.
	for i := filter.Scan(all, 0, &wordBytes); i < len(all); {
		end := filter.Scan(all, i, &notWordBytes)
		out = append(out, all[i:end])
		i = filter.Scan(all, end, &wordBytes)
	}
	return out
}

var upperBytes = func() filter.ByteSet { var s filter.ByteSet; s.Add('A', 'Z'); return s }()

// The bytes of a word, lowercased, and the others.
var wordBytes, notWordBytes = func() (filter.ByteSet, filter.ByteSet) {
	var w filter.ByteSet
	w.Add('a', 'z').Add('0', '9')
	w['\''] = 1
	var n filter.ByteSet
	for c := range n {
		if w[c] == 0 {
			n[c] = 1
		}
	}
	return w, n
}()

// phrase is a sequence of slots, each a set of words and maybe optional:
// a pattern over words() written "ignore [all|any] previous|prior
// instructions".
type phrase struct {
	rule  string
	text  string
	slots []slot
}

type slot struct {
	words    map[string]bool
	optional bool
	gap      int // "..": any run of up to gap words
}

func compile(rule, pattern string) phrase {
	p := phrase{rule: rule, text: pattern}
	for _, f := range strings.Fields(pattern) {
		var s slot
		if f == ".." {
			s.gap = 6
			p.slots = append(p.slots, s)
			continue
		}
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			s.optional = true
			f = f[1 : len(f)-1]
		}
		s.words = map[string]bool{}
		for _, w := range strings.Split(f, "|") {
			s.words[w] = true
		}
		p.slots = append(p.slots, s)
	}
	return p
}

// at matches slots[k:] from ws[i], returning where the match ends.
func (p *phrase) at(ws []string, i, k int) (int, bool) {
	if k == len(p.slots) {
		return i, true
	}
	s := p.slots[k]
	if s.gap > 0 {
		for g := 0; g <= s.gap && i+g <= len(ws); g++ {
			if end, ok := p.at(ws, i+g, k+1); ok {
				return end, true
			}
		}
		return 0, false
	}
	if i < len(ws) && s.words[ws[i]] {
		if end, ok := p.at(ws, i+1, k+1); ok {
			return end, true
		}
	}
	if s.optional {
		return p.at(ws, i, k+1)
	}
	return 0, false
}

// The phrase rules. Each must fire on its README example and not on the
// clean corpus: they look for what a tool's own description has no
// reason to say to a model.
var phraseRules = func() []phrase {
	var out []phrase
	add := func(rule string, patterns ...string) {
		for _, p := range patterns {
			out = append(out, compile(rule, p))
		}
	}
	const earlier = "[all|any|the|your|of|these|those] [previous|prior|above|earlier|preceding|former|other|existing|original] instructions|instruction|directions|rules|guidelines|prompts|prompt"
	add(ruleInstructions,
		"ignore|disregard|forget|override|bypass "+earlier,
		"do not tell|inform|mention|reveal|show|notify|alert [about] [this|it|that|anything|any] [of] [this] [to] [the] user|users",
		"don't|dont|never tell|inform|mention|reveal|show|notify|alert [about] [this|it|that|anything|any] [of] [this] [to] [the] user|users",
		"without telling|informing|notifying|alerting|asking [the] user|users",
		"hide|conceal this|it|that from [the] user|users",
		"the user must|should not|never know|see|notice",
		"before using|calling|invoking|running|executing this tool [,] [you] must|should|always|first",
		"or|otherwise the|this tool will|would not|never work",
		"or|otherwise the|this tool won't|wont work",
		"this is a|an system|important|new message|instruction|instructions|prompt",
		"new|updated|additional system instructions|prompt",
		"you are now",
		"from now on you",
		"you must always|first|never .. call|use|read|send|pass|include|ignore",
	)
	const secret = "key|keys|password|passwords|passphrase|credential|credentials|token|tokens|secret|secrets|mnemonic|seed"
	add(ruleSecrets,
		"read|pass|send|include|provide|share|upload|paste|extract|collect|attach|copy|cat|dump|print|give|put .. private|ssh|api|secret|access|aws|gpg|pgp "+secret,
		"read|pass|send|include|provide|share|upload|paste|extract|collect|attach|copy|cat|dump|print|give|put .. password|passwords|credentials|mnemonic|passphrase",
		"contents|content of .. private|ssh key|keys",
	)
	add(ruleExfiltration,
		"include|append|add|pass|put|send|copy|forward|attach .. conversation|conversations|chat|transcript",
		"include|append|add|pass|put|send|copy|forward|attach .. system prompt|instructions",
		"include|append|add|pass|put|send|copy|forward|attach .. previous|earlier|prior|past messages|conversation|conversations|responses|prompts",
	)
	return out
}()

// phraseStarts indexes the phrase rules by the words they can start with,
// so a text costs one lookup a word, not one a word and rule.
var phraseStarts = func() map[string][]*phrase {
	m := map[string][]*phrase{}
	for i := range phraseRules {
		p := &phraseRules[i]
		for w := range p.slots[0].words {
			m[w] = append(m[w], p)
		}
	}
	return m
}()

// secretFiles are paths no tool's description needs to send a model to.
var secretFiles = []string{
	"~/.ssh", ".ssh/", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", ".aws/credentials", "/etc/passwd", "/etc/shadow",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".docker/config.json", ".kube/config", "kubeconfig",
	"mcp.json", "claude_desktop_config.json", ".gnupg", "wallet.dat",
}

// pathBytes are the bytes every secret file's name has one of: only the
// runs of text around them are searched.
var pathBytes = filter.NewByteSet("./_~")

// secretFile returns the first secret file text mentions, or "". A ".env"
// counts as a word of its own (not process.env or .envrc).
func secretFile(text string) string {
	for i := filter.Scan(text, 0, pathBytes); i < len(text); i = filter.Scan(text, i, pathBytes) {
		start, end := i, i+1
		for start > 0 && text[start-1] > ' ' {
			start--
		}
		for end < len(text) && text[end] > ' ' {
			end++
		}
		if f := secretIn(strings.ToLower(text[start:end])); f != "" {
			return f
		}
		i = end
	}
	return ""
}

// secretIn is secretFile for one run of text without spaces.
func secretIn(low string) string {
	for _, f := range secretFiles {
		if strings.Contains(low, f) {
			return f
		}
	}
	for i := 0; ; {
		j := strings.Index(low[i:], ".env")
		if j < 0 {
			return ""
		}
		j += i
		before := j == 0 || !isWordByte(low[j-1])
		after := j+4 == len(low) || !isWordByte(low[j+4])
		if before && after {
			return ".env"
		}
		i = j + 4
	}
}

func isWordByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_'
}

// exfilVerbs are the imperatives of sending. A tool that sends describes
// itself in the third person ("Sends an email to the given recipient"),
// so the base form is the tell.
var exfilVerbs = map[string]bool{
	"send": true, "forward": true, "upload": true, "post": true, "transmit": true, "exfiltrate": true, "leak": true,
	"copy": true, "report": true, "submit": true, "relay": true, "bcc": true, "cc": true,
}

// exfilTarget finds an imperative to send something to a fixed address
// written in the text (a URL or an email address): "send ... to ADDRESS"
// (the address within four words of "to", "to" within ten of the verb),
// or "bcc ADDRESS".
func exfilTarget(ws []string, text string) string {
	if !strings.Contains(text, "://") && !strings.Contains(text, "@") {
		return ""
	}
	addr := address(text)
	if addr == "" {
		return ""
	}
	near := func(from, n int) bool {
		for _, x := range ws[min(from, len(ws)):min(len(ws), from+n)] {
			if len(x) > 2 && strings.Contains(addr, x) {
				return true
			}
		}
		return false
	}
	for i, w := range ws {
		if !exfilVerbs[w] {
			continue
		}
		if (w == "bcc" || w == "cc") && near(i+1, 4) {
			return "an instruction to " + w + " " + strconv.Quote(addr)
		}
		for k := i + 1; k < min(len(ws), i+11); k++ {
			if ws[k] == "to" && near(k+1, 4) {
				return "an instruction to " + w + " to " + strconv.Quote(addr)
			}
		}
	}
	return ""
}

// address is the first URL or email address of text, or "".
func address(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] == ':' && strings.HasPrefix(text[i:], "://") {
			start := i
			for start > 0 && isLetter(text[start-1]) {
				start--
			}
			end := i + 3
			for end < len(text) && text[end] > ' ' && text[end] != '"' && text[end] != '\'' && text[end] != '>' && text[end] != ')' {
				end++
			}
			if end > i+3 && start < i {
				return strings.ToLower(text[start:end])
			}
		}
		if text[i] == '@' && i > 0 && i+1 < len(text) && isWordByte(text[i-1]) && isWordByte(text[i+1]) {
			start, end := i, i+1
			for start > 0 && (isWordByte(text[start-1]) || text[start-1] == '.' || text[start-1] == '-' || text[start-1] == '+') {
				start--
			}
			for end < len(text) && (isWordByte(text[end]) || text[end] == '.' || text[end] == '-') {
				end++
			}
			if strings.Contains(text[i:end], ".") {
				return strings.ToLower(strings.TrimRight(text[start:end], "."))
			}
		}
	}
	return ""
}

// shadows finds a mention of another server's tool: a name that looks
// like an identifier (it has _ - . or a digit, or an inner capital) or is
// quoted (`x`, "x", 'x'), written whole; names shorter than four
// characters are not looked for. It returns what was found, or "".
func shadows(text string, s Subject) string {
	for i := 0; i < len(text); {
		if !isNameByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isNameByte(text[j]) {
			j++
		}
		tok := strings.TrimRight(text[i:j], ".-")
		quoted := i > 0 && j < len(text) && isQuote(text[i-1]) && text[i-1] == text[j]
		if len(tok) >= 4 && (quoted || identifier(tok)) {
			if server, ok := s.Others[tok]; ok {
				return "a mention of " + server + "." + tok + ", a tool of another server"
			}
		}
		i = j
	}
	return ""
}

func isNameByte(c byte) bool { return isWordByte(c) || c == '-' || c == '.' }

func isQuote(c byte) bool { return c == '`' || c == '"' || c == '\'' }

func identifier(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || i > 0 && c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// listingNames reads a listing (server TAB tool lines) into the tools of
// servers other than server, by name. A name that is also one of server's
// own tools is left out: mentioning its own tool is no shadowing.
func listingNames(listing []byte, server string) map[string]string {
	own := map[string]bool{}
	out := map[string]string{}
	for _, line := range strings.Split(string(listing), "\n") {
		srv, tool, ok := strings.Cut(line, "\t")
		if !ok || tool == "" {
			continue
		}
		if srv == server {
			own[tool] = true
		} else if _, seen := out[tool]; !seen {
			out[tool] = srv
		}
	}
	for t := range own {
		delete(out, t)
	}
	return out
}
