package httptransport

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// fakeAuthorizer hands out "tok-N" tokens: Challenge mints the next one.
type fakeAuthorizer struct {
	mu         sync.Mutex
	token      string
	challenges []int // statuses seen
	refuse     error // Challenge fails with this
	noRetry    bool  // Challenge declines
	seen       []string
	observed   int // successful responses seen (ResponseObserver)
}

func (a *fakeAuthorizer) Observe(resp *http.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		a.observed++
	}
}

func (a *fakeAuthorizer) Authorize(ctx context.Context, req *http.Request) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, req.Method)
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return nil
}

func (a *fakeAuthorizer) Challenge(ctx context.Context, resp *http.Response) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.challenges = append(a.challenges, resp.StatusCode)
	if a.refuse != nil {
		return false, a.refuse
	}
	if a.noRetry {
		return false, nil
	}
	a.token = "tok-" + strconv.Itoa(len(a.challenges))
	return true, nil
}

func (a *fakeAuthorizer) methods() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.seen, ",")
}

// requireToken accepts requests that carry want; everything else gets 401.
// Bodies are checked to arrive whole on the retried POST.
func requireToken(want *atomic.Value, posts *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				b, _ := readAllLimit(r, 1<<20)
				if len(b) == 0 || b[0] != '{' {
					http.Error(w, "empty body on a POST", http.StatusBadRequest)
					return
				}
				posts.Add(1)
			}
			if r.Header.Get("Authorization") != "Bearer "+want.Load().(string) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestAuthorizerEveryRequest(t *testing.T) {
	e := newEnv(t)
	var want atomic.Value
	want.Store("tok-1")
	var posts atomic.Int32
	_, url := e.testServer(requireToken(&want, &posts))
	a := &fakeAuthorizer{}
	cfg := e.config(url)
	cfg.Authorizer = a
	cl, conn := e.connect(cfg, mcp.ClientOptions{})
	if got := call(t, cl, "echo", map[string]any{"message": "hi"}); !strings.Contains(got, "hi") {
		t.Fatalf("echo: %q", got)
	}
	// The first POST was refused, challenged and sent again with its body.
	if len(a.challenges) != 1 || a.challenges[0] != 401 {
		t.Fatalf("challenges: %v", a.challenges)
	}
	// It saw the successful responses too (ResponseObserver).
	a.mu.Lock()
	observed := a.observed
	a.mu.Unlock()
	if observed == 0 {
		t.Error("an Authorizer that observes responses saw none")
	}
	// The server rotates its token: the next request is re-authorized.
	want.Store("tok-2")
	if got := call(t, cl, "echo", map[string]any{"message": "again"}); !strings.Contains(got, "again") {
		t.Fatalf("echo: %q", got)
	}
	waitFor(t, "the GET stream", func() bool { return strings.Contains(a.methods(), "GET") })
	conn.Close()
	if m := a.methods(); !strings.Contains(m, "POST") || !strings.Contains(m, "GET") || !strings.Contains(m, "DELETE") {
		t.Errorf("Authorize saw %s; want POST, GET and DELETE", m)
	}
}

func TestAuthorizerFails(t *testing.T) {
	e := newEnv(t)
	var want atomic.Value
	want.Store("never")
	var posts atomic.Int32
	_, url := e.testServer(requireToken(&want, &posts))
	boom := errors.New("the authorization server said no")
	cfg := e.config(url)
	cfg.Authorizer = &fakeAuthorizer{refuse: boom}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	ae := wantErrAs[*AuthError](t, err)
	if !errors.Is(err, boom) || ae.Status != 401 || ae.Method != http.MethodPost {
		t.Fatalf("%+v", ae)
	}
	wantContains(t, ae.Error(), `server "test"`, "HTTP 401", "authorization failed", "said no")
}

func TestAuthorizerDeclines(t *testing.T) {
	e := newEnv(t)
	var want atomic.Value
	want.Store("never")
	var posts atomic.Int32
	_, url := e.testServer(requireToken(&want, &posts))
	cfg := e.config(url)
	cfg.Authorizer = &fakeAuthorizer{noRetry: true}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	se := wantErrAs[*HTTPStatusError](t, err)
	if se.Status != 401 || posts.Load() != 1 {
		t.Fatalf("%+v after %d POSTs", se, posts.Load())
	}
}

// An Authorizer that always says retry is cut off by the transport's cap.
func TestAuthorizerRetryCap(t *testing.T) {
	e := newEnv(t)
	var want atomic.Value
	want.Store("never")
	var posts atomic.Int32
	_, url := e.testServer(requireToken(&want, &posts))
	cfg := e.config(url)
	cfg.Authorizer = &fakeAuthorizer{}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	wantErrAs[*HTTPStatusError](t, err)
	if n := posts.Load(); n != maxAuthRetries+1 {
		t.Fatalf("%d POSTs, want %d", n, maxAuthRetries+1)
	}
}
