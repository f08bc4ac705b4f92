package console_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The browser the tests drive: Debian's Chromium (make testdeps installs
// it), headless, with a profile of its own per test.

func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("no chromium on PATH: the console's tests drive a real browser; run make testdeps (or apt-get install -y chromium)")
	return ""
}

// newBrowser starts Chromium for t and returns a context for its first
// tab; the browser ends with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("window-size", "1280,900"),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	// The first Run starts the browser, under no deadline of its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// person is a new browser context in the same browser: cookies of its
// own, as another person's browser has.
func person(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// within bounds the actions of one step: generous, as the box is loaded;
// it starts when the step does, after setup.
func within(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(within(t, ctx), steps...); err != nil {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		page, _ := chromedp.Run(qctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("%s: %v; the page:\n%s", what, err, page)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(within(t, ctx), chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %.60q: %v", js, err)
	}
	return v
}

func login(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	do(t, ctx, "log in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)),
	)
}

// artifacts is where screenshots go: the test's artifact directory (kept
// under the output directory with go test -artifacts).
func artifacts(t *testing.T) string {
	dir := t.ArtifactDir()
	t.Logf("screenshots in %s", dir)
	return dir
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(within(t, ctx), chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

var axeSource string

// axe runs axe-core in the page and fails on serious or critical
// violations.
func axe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if axeSource == "" {
		b, err := os.ReadFile(filepath.Join(testenv.Root(t), "tools/npm/node_modules/axe-core/axe.min.js"))
		if err != nil {
			t.Fatalf("axe-core: %v (run make testdeps)", err)
		}
		axeSource = string(b)
	}
	eval[bool](t, ctx, axeSource+"\n;true")
	out := eval[string](t, ctx, `axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html).slice(0, 3)}))))`)
	var vs []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("axe on %s: %v: %s", page, err, out)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe on %s: %s (%s): %s; %s", page, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, " | "))
		} else {
			t.Logf("axe on %s: %s (%s): %s", page, v.ID, v.Impact, v.Help)
		}
	}
}

// until waits until js is true in the page.
func until(js string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](js)(ctx, t)
		return chromedp.Void{}, err
	}
}

// eventually waits, across page loads, until js is true in the page; the
// bound is generous and starts with the wait.
func eventually(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(qctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so within 60 s (last error: %v)", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func navigate(url string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(url) }
func reload() chromedp.Action[chromedp.Void]             { return chromedp.Reload() }
func waitRow() chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(`#live tbody tr`))
}
func clickRow() chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Click(chromedp.CSS(`#live tbody tr a`)), chromedp.WaitVisible(chromedp.CSS(`.facts`)))
}

// throttle slows the page's CPU by rate, as a busy laptop would.
func throttle(rate float64) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: rate})
		return chromedp.Void{}, err
	}
}
