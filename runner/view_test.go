package runner

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/sim"
	"skyloop/view"
)

// TestLiveViewInChromium serves a real-time run with the web view and
// opens it in headless Chromium (software WebGL): the page connects,
// shows every vehicle, the vehicles move between two looks, selecting one
// shows its flight mode, the network figures fill in, the pause button
// stops simulated time and starts it again, the page records no script
// error, and the screenshot (saved in the test's directory) is not blank.
func TestLiveViewInChromium(t *testing.T) {
	ctx := browser(t)
	pace := &PaceControl{}
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.LivePages(pace, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Paced at twice real time, long enough for any machine to start
	// Chromium and look twice; stopped when the test is done.
	text := strings.Replace(mcapYAML, "duration: 4s", "duration: 120s\nrealtime: 2", 1)
	var stop atomic.Bool
	r := buildYAML(t, text, engine.Options{Registry: registry, Workers: 1})
	r.SetOptions(engine.Options{Stop: stop.Load})
	done := make(chan error, 1)
	go func() {
		_, err := Execute(r, filepath.Join(t.TempDir(), "run"), Options{Live: srv, Pace: pace})
		done <- err
	}()
	defer func() {
		stop.Store(true)
		if err := <-done; err != nil && !errors.Is(err, sim.ErrStopped) {
			t.Errorf("run: %v", err)
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+srv.Addr()+"/"), chromedp.WaitReady("#panel")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	eval := evaluator(t, ctx)
	for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if n, _ := eval(`window.skyloop ? window.skyloop.vehicles : 0`).(float64); n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %v vehicles, want 4 (errors %v)", eval(`window.skyloop && window.skyloop.vehicles`), eval(`window.skyloop && window.skyloop.errors`))
		}
	}
	first := eval(`window.skyloop.positions()`).(map[string]any)
	time.Sleep(1500 * time.Millisecond)
	second := eval(`window.skyloop.positions()`).(map[string]any)
	moved := 0
	for name, p := range first {
		a, b := p.([]any), second[name].([]any)
		d := 0.0
		for i := range a {
			d += math.Abs(a[i].(float64) - b[i].(float64))
		}
		if d > 0.1 {
			moved++
		}
	}
	if moved < 3 {
		t.Errorf("%d of 4 vehicles moved on the page in 1.5 s: %v then %v", moved, first, second)
	}
	eval(`window.skyloop.select("uav-2")`)
	time.Sleep(300 * time.Millisecond)
	panel := eval(`window.skyloop.panel()`).(string)
	if !strings.Contains(panel, "uav-2") || !strings.Contains(panel, "mode") || !strings.Contains(panel, "goto") && !strings.Contains(panel, "hold") {
		t.Errorf("the panel shows %q, want uav-2 with its mode", panel)
	}
	if rx := eval(`document.getElementById("rx").textContent`).(string); rx == "0" {
		t.Error("the network panel counts no receptions")
	}
	if aoi := eval(`document.getElementById("aoi").textContent`).(string); !strings.HasSuffix(aoi, " s") {
		t.Errorf("the network panel shows no age of information: %q", aoi)
	}
	// Pause from the page: simulated time stops, then goes on.
	if err := chromedp.Do(ctx, chromedp.Click("#play")); err != nil {
		t.Fatal(err)
	}
	var still float64
	for deadline := time.Now().Add(5 * time.Second); ; {
		a := eval(`window.skyloop.simTime`).(float64)
		time.Sleep(400 * time.Millisecond)
		if b := eval(`window.skyloop.simTime`).(float64); a == b {
			still = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("simulated time still runs after pause")
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click("#play")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); eval(`window.skyloop.simTime`).(float64) == still; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("simulated time does not go on after resume")
		}
	}
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	tctx, c := context.WithTimeout(ctx, 10*time.Second)
	defer c()
	shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "view.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	colors := map[[3]uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 7 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 12, g >> 12, b >> 12}] = true
		}
	}
	if len(colors) < 20 {
		t.Errorf("the screenshot (%s) has %d colours: blank?", file, len(colors))
	}
	t.Logf("screenshot: %s (%d colours)", file, len(colors))
}
