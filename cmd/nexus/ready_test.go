package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// Issue 42 part 2 with real processes: behind `nexus serve` (stdio), three
// servers that take 5 s to start (the 3 s, with room for a loaded
// machine) and one that starts at once. The first tools/list answers
// without the slow three (so before they are up: the answer is the
// proof, no clock is read), list_changed follows, and a later list has
// them all. The 60 s bound is only against a hang. A modern (2026-07-28)
// agent hears it on its subscriptions/listen stream, tagged with the
// stream's subscriptionId.
func TestServeListsWhatIsReady(t *testing.T) {
	t.Run("2025-11-25", func(t *testing.T) { serveListsWhatIsReady(t, false) })
	t.Run("2026-07-28", func(t *testing.T) { serveListsWhatIsReady(t, true) })
}

// modernMetaJSON is the _meta of a modern request.
const modernMetaJSON = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

func serveListsWhatIsReady(t *testing.T, modern bool) {
	bin := testenv.Nexus(t)
	mark := fmt.Sprintf("ready-%d", time.Now().UnixNano())
	var hcl strings.Builder
	hcl.WriteString("gateway {\n  list_wait = \"200ms\"\n}\n")
	for _, s := range []struct{ name, delay, start string }{{"fast", "0s", "eager"}, {"slow1", "5s", ""}, {"slow2", "5s", ""}, {"slow3", "5s", ""}} {
		start := ""
		if s.start != "" {
			start = fmt.Sprintf("  start = %q\n", s.start)
		}
		fmt.Fprintf(&hcl, "server %q {\n%s  stdio {\n    command = %q\n    args = [\"testserver\"]\n    env = { MCP_START_DELAY = %q, NEXUS_TEST_MARK = %q }\n  }\n}\n",
			s.name, start, bin, s.delay, mark)
	}
	hcl.WriteString("agent \"claude\" {\n  permission = \"yolo\"\n}\n")
	path := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(path, []byte(hcl.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "serve", "--config", path, "--agent", "claude")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]json.RawMessage, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		waited := make(chan struct{})
		go func() { io.Copy(io.Discard, out); cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-waited
		}
		noneLeft(t, mark)
	})
	deadline := time.After(60 * time.Second)
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatalf("writing to nexus serve: %v; stderr:\n%s", err, stderr.String())
		}
	}
	changed := 0
	// await returns the answer to id, counting list_changed on the way.
	await := func(id string) json.RawMessage {
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("nexus serve ended; stderr:\n%s", stderr.String())
				}
				if string(m["method"]) == `"notifications/tools/list_changed"` {
					if modern && !strings.Contains(string(m["params"]), `"io.modelcontextprotocol/subscriptionId":"listen"`) {
						t.Fatalf("list_changed outside the listen stream: %s", m["params"])
					}
					changed++
				}
				if string(m["id"]) == id {
					if m["error"] != nil {
						t.Fatalf("request %s: %s", id, m["error"])
					}
					return m["result"]
				}
			case <-deadline:
				t.Fatalf("no answer to request %s within 60 s; stderr:\n%s", id, stderr.String())
			}
		}
	}
	list := func(id int) string {
		if modern {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{%s}}`, id, modernMetaJSON))
		} else {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		}
		var r struct{ Tools []struct{ Name string } }
		json.Unmarshal(await(fmt.Sprint(id)), &r)
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		return strings.Join(names, " ")
	}
	if modern {
		// The listen stream first (its acknowledgement says it is open),
		// so no change can come before it.
		send(`{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMetaJSON + `}}`)
		for acked := false; !acked; {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("nexus serve ended; stderr:\n%s", stderr.String())
				}
				acked = string(m["method"]) == `"notifications/subscriptions/acknowledged"`
			case <-deadline:
				t.Fatalf("subscriptions/listen was not acknowledged; stderr:\n%s", stderr.String())
			}
		}
	} else {
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		await("1")
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	first := list(2)
	if strings.Contains(first, "mcp_slow") {
		t.Fatalf("the first list waited for a slow server: %s", first)
	}
	all := func(s string) bool {
		return strings.Contains(s, "mcp_slow1_") && strings.Contains(s, "mcp_slow2_") && strings.Contains(s, "mcp_slow3_") && strings.Contains(s, "mcp_fast_")
	}
	got, id, before := first, 3, 0
	for !all(got) {
		// Wait for a list_changed sent after the last list was asked for
		// (one may have come while it was answered).
		for changed <= before {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("nexus serve ended; stderr:\n%s", stderr.String())
				}
				if string(m["method"]) == `"notifications/tools/list_changed"` {
					changed++
				}
			case <-deadline:
				t.Fatalf("no list_changed brought every server within 60 s (last list: %s); stderr:\n%s", got, stderr.String())
			}
		}
		before = changed
		got = list(id)
		id++
	}
}
