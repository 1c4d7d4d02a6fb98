package runner

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium (software WebGL, no network beyond the
// test's) for the test and returns its context; it skips the test when
// Chromium is missing, unless SKYLOOP_REQUIRE_CHROMIUM says CI must have it.
func browser(t *testing.T) context.Context {
	t.Helper()
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
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// evaluator returns a function that evaluates JavaScript in the page of
// ctx, failing the test on an error.
func evaluator(t *testing.T, ctx context.Context) func(js string) any {
	return func(js string) any {
		t.Helper()
		tctx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[any](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
}
