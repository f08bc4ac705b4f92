package httpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStoredEvent(t *testing.T) {
	for _, c := range []struct {
		flag byte
		key  string
		seq  int
		data string
	}{
		{'h', "n:7", 0, ""},
		{'e', "s:a\"b", 3, `{"jsonrpc":"2.0","method":"x"}`},
		{'f', "n:1", 12, "line1\nline2"},
		{'e', "", 0, `{}`},
	} {
		flag, key, seq, data, ok := parseStored(storedEvent(c.flag, c.key, c.seq, []byte(c.data)))
		if !ok || flag != c.flag || key != c.key || seq != c.seq || string(data) != c.data {
			t.Errorf("%+v: got %c %q %d %q %v", c, flag, key, seq, data, ok)
		}
	}
	for _, bad := range []string{"", "e", "e\n", "e\nk", "e\nk\nx\n", "ee\nk\n1\n"} {
		if _, _, _, _, ok := parseStored([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestReplicaIDs(t *testing.T) {
	h := &Handler{shared: &sharedState{replica: "abc123"}}
	for _, id := range []string{`7`, `"x:y"`, `-1.5`} {
		nid, _ := json.Marshal("abc123:" + id)
		msg, err := withID([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), nid)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := h.ownID(msg)
		if !ok || !bytes.Contains(back, []byte(`"id":`+id)) {
			t.Errorf("%s: %s %v", id, back, ok)
		}
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,             // not a replica's id
		`{"jsonrpc":"2.0","id":"other:1","result":{}}`,     // another replica's
		`{"jsonrpc":"2.0","id":"abc123:","result":{}}`,     // no id after it
		`{"jsonrpc":"2.0","id":"abc123:{bad","result":{}}`, // not JSON after it
	} {
		if _, ok := h.ownID([]byte(msg)); ok {
			t.Errorf("%s taken as this replica's", msg)
		}
	}
	if r, raw, ok := replicaOf([]byte(`{"jsonrpc":"2.0","id":"other:1","result":{}}`)); !ok || r != "other" || raw != "1" {
		t.Errorf("replicaOf: %q %q %v", r, raw, ok)
	}
}

// What a client POSTs as an answer, and what another replica stored, are
// read without trusting them.
func FuzzShared(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"abc123:5","result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"abc123:\"s\"","error":{"code":1,"message":"m"}}`))
	f.Add([]byte("f\nn:3\n4\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"))
	f.Add([]byte("h\ns:x\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		h := &Handler{shared: &sharedState{replica: "abc123"}}
		if back, ok := h.ownID(b); ok && !json.Valid(back) {
			t.Fatalf("ownID made invalid JSON: %s", back)
		}
		if flag, key, seq, data, ok := parseStored(b); ok {
			again := storedEvent(flag, key, seq, data)
			if f2, k2, s2, d2, ok2 := parseStored(again); !ok2 || f2 != flag || k2 != key || s2 != seq || !bytes.Equal(d2, data) {
				if seq > 0 && !bytes.ContainsRune([]byte(key), '\n') {
					t.Fatalf("round trip of %q", b)
				}
			}
		}
		_ = keyRaw(string(b))
	})
}
