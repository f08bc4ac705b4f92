package policy

import "fmt"

// EntryFor places a loaded filter in the chain as its config block says:
// kind, match blocks and on_error. on_error "allow" lets a policy's
// request through, and a sanitizer's result pass, when the filter fails;
// anything else fails closed.
func EntryFor(link Link, f *Filter) Entry {
	en := Entry{Link: link, Kind: KindPolicy, OnError: OnErrorDeny}
	if f.Kind == "sanitizer" {
		en.Kind, en.OnError = KindSanitizer, OnErrorError
	}
	switch f.OnError {
	case OnErrorAllow, OnErrorPass:
		en.OnError = OnErrorAllow
		if en.Kind == KindSanitizer {
			en.OnError = OnErrorPass
		}
	}
	en.Match = append(en.Match, f.Match...)
	en.Shadow = f.Mode == ModeShadow
	if f.Source.File != "" && f.Source.Line > 0 {
		en.Source = fmt.Sprintf("%s:%d", f.Source.File, f.Source.Line)
	}
	return en
}
