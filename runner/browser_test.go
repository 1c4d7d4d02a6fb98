package runner

import (
	"context"
	"os"
	"os/exec"
	"skyloop/internal/short"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium (software WebGL, no network beyond the
// test's) for the test and returns its context; it skips the test when
// Chromium is missing, unless SKYLOOP_REQUIRE_CHROMIUM says CI must have it.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	short.Skip(t, "needs Chromium")
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_CHROMIUM") != "" {
			t.Fatalf("Chromium is required (SKYLOOP_REQUIRE_CHROMIUM) but missing: %v", err)
		}
		t.Skipf("skipping: no chromium (%v); apt-get install chromium (CI does)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("use-angle", "swiftshader"), chromedp.Flag("enable-unsafe-swiftshader", true), chromedp.Flag("disable-gpu", false),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1200, 800), chromedp.UserDataDir(t.TempDir()))
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// waitLimit is how long a browser test waits for a condition before it
// fails: long, since the machine may be loaded; it costs nothing when the
// condition comes sooner.
const waitLimit = 60 * time.Second

// waitFor polls cond (a JavaScript expression) in the page of ctx until
// it is true, failing the test with what (and the page's errors) after a
// deadline generous enough for a loaded machine.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	eval := evaluator(t, ctx)
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
		if ok, _ := eval(`!!(` + cond + `)`).(bool); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %v (page errors %v; view %v)", what, waitLimit, eval(`window.skyloop && window.skyloop.errors`), eval(`window.skyloop && JSON.stringify(window.skyloop.view())`))
		}
	}
}

// evaluator returns a function that evaluates JavaScript in the page of
// ctx, failing the test on an error.
func evaluator(t *testing.T, ctx context.Context) func(js string) any {
	return func(js string) any {
		t.Helper()
		tctx, c := context.WithTimeout(ctx, 30*time.Second)
		defer c()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[any](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
}
