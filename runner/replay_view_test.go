package runner

import (
	"math"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"skyloop/engine"
	"skyloop/view"
)

// TestReplayViewInChromium replays a finished run in headless Chromium
// (skyloop view): the page loads run.json, shows every vehicle, and the
// scrubber moves time back and forth (the vehicles are elsewhere at 3.5 s
// than at 0.5 s, and back where they were when it returns); selecting a
// vehicle shows its mode; no script error.
func TestReplayViewInChromium(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), "run")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, dir)
	rep, err := view.LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Names) != 4 || len(rep.Samples.T) < 100 || len(rep.Net.T) < 100 || len(rep.Obstacles) != 1 {
		t.Fatalf("replay of %d vehicles, %d samples, %d network events, %d obstacles", len(rep.Names), len(rep.Samples.T), len(rep.Net.T), len(rep.Obstacles))
	}
	pages, err := view.ReplayPages(rep, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pages)
	defer srv.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#panel")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	eval := evaluator(t, ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ok, _ := eval(`!!(window.skyloop && window.skyloop.replay && window.skyloop.vehicles === 4)`).(bool); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replay did not start: %v", eval(`window.skyloop && window.skyloop.errors`))
		}
	}
	eval(`document.getElementById("play").click()`) // pause: time moves only by the scrubber
	at := func(sec float64) map[string]any {
		eval(`window.skyloop.seek(` + strings.TrimRight(strings.TrimRight(fmtF(sec), "0"), ".") + `)`)
		if got := eval(`window.skyloop.simTime`).(float64); math.Abs(got-sec) > 1e-9 {
			t.Fatalf("seek(%v) shows %v s", sec, got)
		}
		return eval(`window.skyloop.positions()`).(map[string]any)
	}
	early, late, back := at(0.5), at(3.5), at(0.5)
	moved := 0
	for name := range early {
		a, b, c := early[name].([]any), late[name].([]any), back[name].([]any)
		d := 0.0
		for i := range a {
			d += math.Abs(a[i].(float64) - b[i].(float64))
			if a[i].(float64) != c[i].(float64) {
				t.Errorf("%s at 0.5 s: %v, then %v after going to 3.5 s and back", name, a, c)
			}
		}
		if d > 0.5 {
			moved++
		}
	}
	if moved < 3 {
		t.Errorf("%d of 4 vehicles are elsewhere at 3.5 s than at 0.5 s", moved)
	}
	eval(`window.skyloop.select("uav-1")`)
	if panel := eval(`window.skyloop.panel()`).(string); !strings.Contains(panel, "uav-1") || !strings.Contains(panel, "mode") {
		t.Errorf("panel %q", panel)
	}
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
