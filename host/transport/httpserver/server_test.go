package httpserver

import "testing"

func TestAppendEvent(t *testing.T) {
	got := string(appendEvent(nil, "p1", 3, []byte("a\nb")))
	if got != "id: p1-3\ndata: a\ndata: b\n\n" {
		t.Errorf("%q", got)
	}
	if got := string(appendEvent(nil, "g", 0, nil)); got != "id: g-0\ndata:\n\n" {
		t.Errorf("%q", got)
	}
	if got := string(appendLegacyEvent(nil, []byte(`{"a":1}`))); got != "event: message\ndata: {\"a\":1}\n\n" {
		t.Errorf("%q", got)
	}
}
