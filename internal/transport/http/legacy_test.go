package httptransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// legacyServer speaks the 2024-11-05 HTTP+SSE transport: GET /sse opens
// the stream and announces /messages?sessionId=N; POSTs there feed the
// session, and everything the server says goes down the stream.
type legacyServer struct {
	endpoint           func(sid string) string // the endpoint event's data
	closeAfterEndpoint bool

	mu       sync.Mutex
	next     int
	sessions map[string]mcp.Conn
	wg       sync.WaitGroup
	ctx      context.Context
}

func newLegacyServer(t *testing.T) *legacyServer {
	ctx, cancel := context.WithCancel(context.Background())
	s := &legacyServer{sessions: map[string]mcp.Conn{}, ctx: ctx,
		endpoint: func(sid string) string { return "/messages?sessionId=" + sid }}
	t.Cleanup(func() { cancel(); s.wg.Wait() })
	return s
}

func (s *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/sse" && r.Method == http.MethodGet:
		s.stream(w, r)
	case r.URL.Path == "/messages" && r.Method == http.MethodPost:
		s.mu.Lock()
		conn := s.sessions[r.URL.Query().Get("sessionId")]
		s.mu.Unlock()
		if conn == nil {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if err := conn.WriteMessage(r.Context(), body); err != nil {
			http.Error(w, err.Error(), http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *legacyServer) stream(w http.ResponseWriter, r *http.Request) {
	client, server := mcp.Pipe()
	s.mu.Lock()
	s.next++
	sid := strconv.Itoa(s.next)
	s.sessions[sid] = client
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		testserver.New(testserver.Options{}).Serve(ctx, server)
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", s.endpoint(sid))
	http.NewResponseController(w).Flush()
	if s.closeAfterEndpoint {
		return
	}
	msgs := make(chan []byte)
	go func() {
		for {
			m, err := client.ReadMessage()
			if err != nil {
				close(msgs)
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
			}
		}
	}()
	defer client.Close()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
			http.NewResponseController(w).Flush()
		case <-r.Context().Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

func TestLegacySSE(t *testing.T) {
	for _, explicit := range []bool{true, false} {
		t.Run(fmt.Sprintf("configured=%v", explicit), func(t *testing.T) {
			e := newEnv(t)
			ls := newLegacyServer(t)
			rec := &recorder{}
			url := e.serve(rec.wrap(ls))
			cfg := e.config(url + "/sse")
			cfg.LegacySSE = explicit
			logs := make(chan mcp.LogMessage, 4)
			c, conn := e.connect(cfg, mcp.ClientOptions{
				OnLog: func(m mcp.LogMessage) { logs <- m },
				Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Role: "assistant", Content: json.RawMessage(`{"type":"text","text":"legacy"}`), Model: "m"}, nil
				},
			})
			if !conn.Legacy() {
				t.Fatal("not speaking legacy SSE")
			}
			if got := call(t, c, "add", map[string]any{"a": 1, "b": 2}); got != "3" {
				t.Errorf("add = %q", got)
			}
			if got := call(t, c, "echo", map[string]any{"message": "old"}); got != "old" {
				t.Errorf("echo = %q", got)
			}
			<-logs
			if got := call(t, c, "sample", map[string]any{"prompt": "p"}); got != "legacy" {
				t.Errorf("sample = %q", got)
			}
			for _, r := range rec.all() {
				if r.header.Get("Mcp-Method") == mcp.MethodServerDiscover {
					continue // the era probe, a modern request by design
				}
				if r.header.Get("Mcp-Session-Id") != "" || r.header.Get("Mcp-Protocol-Version") != "" {
					t.Errorf("legacy request carried streamable headers: %v", r.header)
				}
			}
		})
	}
}

func TestLegacyCrossOriginEndpoint(t *testing.T) {
	e := newEnv(t)
	ls := newLegacyServer(t)
	ls.endpoint = func(sid string) string { return "http://169.254.169.254/messages?sessionId=" + sid }
	url := e.serve(ls)
	cfg := e.config(url + "/sse")
	cfg.LegacySSE = true
	_, err := Dial(testCtx(t), cfg)
	pe := wantErrAs[*ProtocolError](t, err)
	wantContains(t, pe.Error(), `server "test"`, "another origin")
}

func TestLegacyStreamEnds(t *testing.T) {
	e := newEnv(t)
	ls := newLegacyServer(t)
	ls.closeAfterEndpoint = true
	url := e.serve(ls)
	cfg := e.config(url + "/sse")
	cfg.LegacySSE = true
	c := e.dialConn(cfg)
	_, err := c.ReadMessage()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("want a clean end (io.EOF), got %v", err)
	}
	wantContains(t, err.Error(), `server "test"`, "closed the SSE stream")
}

func TestFallbackFails(t *testing.T) {
	e := newEnv(t)
	url := e.serve(http.NotFoundHandler())
	c := e.dialConn(e.config(url + "/nope"))
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	se := wantErrAs[*HTTPStatusError](t, err)
	if se.Status != 404 || se.Fallback == nil {
		t.Fatalf("%+v", se)
	}
	wantContains(t, se.Error(), "HTTP 404", "MCP endpoint", "legacy HTTP+SSE fallback failed too", "GET "+url+"/nope")
}
