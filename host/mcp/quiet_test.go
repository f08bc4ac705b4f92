package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A session that ends while a list_changed refresh is in flight, and a
// late answer to a request the client gave up on, are not warnings: a
// clean exit prints nothing of the kind (both showed after most commands
// against server-everything, which announces a list change at start).
func TestNoWarningsAtCleanEnd(t *testing.T) {
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	cc, sc := Pipe()
	defer sc.Close()
	ctx := context.Background()
	// A raw server: it answers initialize and the first tools/list, holds
	// x/slow until told (and ignores its cancellation, as a busy server
	// may), and never answers a second tools/list.
	slowID := make(chan json.RawMessage, 1)
	refreshing := make(chan struct{})
	go func() {
		lists := 0
		for {
			frame, err := sc.ReadMessage()
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal(frame, &m)
			reply := func(result string) {
				sc.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`))
			}
			switch m.Method {
			case MethodInitialize:
				reply(`{"protocolVersion":"2025-11-25","serverInfo":{"name":"raw","version":"1"},"capabilities":{"tools":{"listChanged":true}}}`)
			case MethodToolsList:
				if lists++; lists == 1 {
					reply(`{"tools":[]}`)
				} else {
					close(refreshing)
				}
			case "x/slow":
				slowID <- m.ID
			}
		}
	}()
	c, err := Connect(ctx, cc, ClientOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = c.Peer().Call(tctx, "x/slow", nil, nil)
	cancel()
	if err == nil {
		t.Fatal("x/slow answered")
	}
	id := <-slowID
	// The late answer, then a list change whose refresh the server holds.
	sc.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`))
	sc.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	select {
	case <-refreshing:
	case <-time.After(10 * time.Second):
		t.Fatal("the client never refreshed its tools after list_changed")
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "refreshing list") || !strings.Contains(logs.String(), "dropping") {
		if time.Now().After(deadline) {
			t.Fatalf("the refresh's end or the late answer was never logged:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	if strings.Contains(logs.String(), "[WARN]") {
		t.Errorf("warnings at a clean end:\n%s", logs.String())
	}
}
