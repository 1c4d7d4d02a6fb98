package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
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
	// Paced at twice real time, long enough (10 minutes) for any machine
	// to start Chromium and look; stopped when the test is done.
	text := strings.Replace(mcapYAML, "duration: 4s", "duration: 1200s\nrealtime: 2", 1)
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
	waitFor(t, ctx, "the page shows the 4 vehicles", `window.skyloop && window.skyloop.vehicles === 4`)
	// The vehicles move: wait until three of the four are elsewhere than
	// at the first look (no fixed sleep: the machine may be loaded).
	first := eval(`window.skyloop.positions()`).(map[string]any)
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
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
		if moved >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 vehicles moved on the page in %v: %v then %v", moved, waitLimit, first, second)
		}
	}
	eval(`window.skyloop.select("uav-2")`)
	waitFor(t, ctx, "the panel shows uav-2 with its mode",
		`(p => p.includes("uav-2") && p.includes("mode") && (p.includes("goto") || p.includes("hold")))(window.skyloop.panel())`)
	waitFor(t, ctx, "the network panel counts receptions", `document.getElementById("rx").textContent !== "0"`)
	waitFor(t, ctx, "the network panel shows the age of information", `document.getElementById("aoi").textContent.endsWith(" s")`)
	// Pause from the page: the pacer is paused, and simulated time on the
	// page stops (unchanged for a second), then goes on after resume.
	if err := chromedp.Do(ctx, chromedp.Click("#play")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
		if paused, _ := pace.State(); paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pause button did not pause the pacer")
		}
	}
	var still float64
	for deadline, since, last := time.Now().Add(waitLimit), time.Now(), -1.0; ; time.Sleep(50 * time.Millisecond) {
		now := eval(`window.skyloop.simTime`).(float64)
		if now != last {
			since, last = time.Now(), now
		}
		if time.Since(since) >= time.Second {
			still = now
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("simulated time still runs after pause")
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click("#play")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "simulated time goes on after resume", fmt.Sprintf(`window.skyloop.simTime > %v`, still))
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	tctx, c := context.WithTimeout(ctx, 60*time.Second)
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

// TestPaceFactorBounds: the real-time factor is bounded at its root, the
// pacer's SetFactor (0.01 to 1000; NaN and infinities refused), and the
// page's /control answers a bad factor 400 with the range, leaving the run
// as it was. On fc3ddb2 {"factor": 1e-300} was taken and froze the run.
func TestPaceFactorBounds(t *testing.T) {
	pace := &PaceControl{}
	for _, f := range []float64{1e-300, 0.001, 0, -1, 1000.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if err := pace.SetFactor(f); err == nil {
			t.Errorf("SetFactor(%v) was accepted", f)
		}
	}
	if _, factor := pace.State(); factor != 0 {
		t.Fatalf("refused factors changed the factor to %v", factor)
	}
	for _, f := range []float64{MinFactor, 1, MaxFactor} {
		if err := pace.SetFactor(f); err != nil {
			t.Errorf("SetFactor(%v): %v", f, err)
		}
	}
	pages := view.LivePages(pace, 1)
	for _, body := range []string{`{"factor":1e-300}`, `{"factor":0.001}`, `{"factor":1e999}`, `{"factor":1001}`} {
		r := httptest.NewRequest("POST", "/control", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		pages.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("POST %s: %d %q, want 400", body, w.Code, w.Body.String())
		}
	}
	if _, factor := pace.State(); factor != MaxFactor {
		t.Errorf("the factor is %v after refused requests, want %v", factor, MaxFactor)
	}
	// A run whose own factor is out of range does not start.
	r := buildYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1, Realtime: 1e-300})
	if _, err := Execute(r, filepath.Join(t.TempDir(), "run"), Options{}); err == nil || !strings.Contains(err.Error(), "real-time factor") {
		t.Errorf("a run paced at 1e-300: %v", err)
	}
}

// TestCrossSitePageCannotControlTheRun opens, in headless Chromium, a page
// of another site (http://localhost:PORT) that tries what any web page the
// user visits can try against a live run on 127.0.0.1: a no-cors
// text/plain POST to /control (on fc3ddb2 it paused the run), a JSON
// POST, and the Foxglove WebSocket. None gets through.
func TestCrossSitePageCannotControlTheRun(t *testing.T) {
	ctx := browser(t)
	pace := &PaceControl{}
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.LivePages(pace, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/evil.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, crossSiteScript)
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!DOCTYPE html><title>a page the user visits</title><script src="/evil.js"></script>`)
		}
	}))
	defer evil.Close()
	_, port, _ := net.SplitHostPort(evil.Listener.Addr().String())
	url := "http://localhost:" + port + "/?target=" + "http://" + srv.Addr()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	waitFor(t, ctx, "the other site's page tried everything", `window.done === true`)
	results := evaluator(t, ctx)(`window.results`).(map[string]any)
	t.Logf("the other site's page: %v", results)
	if paused, factor := pace.State(); paused || factor != 0 {
		t.Errorf("a page of another site changed the run: paused %v, factor %v (%v)", paused, factor, results)
	}
	if results["ws"] == "open" {
		t.Errorf("a page of another site opened the run's WebSocket")
	}
	if n, _ := srv.Clients(); n != 0 {
		t.Errorf("%d WebSocket clients connected", n)
	}
}

// crossSiteScript is the other site's script: the target is the live
// run's address.
const crossSiteScript = `
const target = new URLSearchParams(location.search).get("target");
window.results = {};
(async () => {
  try {
    await fetch(target + "/control", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"pause": true, "factor": 0.01}' });
    window.results.plain = "sent";
  } catch (e) { window.results.plain = String(e); }
  try {
    const r = await fetch(target + "/control", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"pause": true}' });
    window.results.json = r.status;
  } catch (e) { window.results.json = String(e); }
  await new Promise((done) => {
    const ws = new WebSocket(target.replace("http:", "ws:") + "/", ["foxglove.websocket.v1"]);
    ws.onopen = () => { window.results.ws = "open"; ws.close(); done(); };
    ws.onerror = () => { window.results.ws = window.results.ws || "refused"; done(); };
    ws.onclose = () => { window.results.ws = window.results.ws || "closed"; done(); };
  });
  window.done = true;
})();
`

// TestDNSRebindingInChromium: Chromium resolves attacker.example to
// 127.0.0.1 (as a rebinding DNS server would make it), and a page loaded
// from http://attacker.example:PORT/ reaches the live run's port. The
// server answers 421 instead of the page (fc3ddb2 served it, and with it
// /control, to the attacker's origin).
func TestDNSRebindingInChromium(t *testing.T) {
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP attacker.example 127.0.0.1"))
	pace := &PaceControl{}
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.LivePages(pace, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Addr())
	if err := chromedp.Do(ctx, chromedp.Navigate("http://attacker.example:"+port+"/")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	waitFor(t, ctx, "the page has loaded", `document.readyState === "complete"`)
	eval := evaluator(t, ctx)
	body := eval(`document.body ? document.body.innerText : ""`).(string)
	if !strings.Contains(body, "skyloop serves this address only by the names") || eval(`typeof window.skyloop`) != "undefined" {
		t.Errorf("the page from attacker.example shows %.200q", body)
	}
	// The same origin's fetch of /control is refused too.
	eval(`fetch("/control", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"pause": true}' }).then(r => { window.status421 = r.status; })`)
	waitFor(t, ctx, "the attacker's fetch is answered", `window.status421 !== undefined`)
	if code := eval(`window.status421`); code != float64(http.StatusMisdirectedRequest) {
		t.Errorf("POST /control from attacker.example: %v, want 421", code)
	}
	if paused, _ := pace.State(); paused {
		t.Error("a page from attacker.example paused the run")
	}
}

// TestPaceSpeedMeasured: the pacer measures the run's speed for /control
// over windows of a second of wall time: never above the pace set (here
// 20x, 1 ms ticks), zero again after a change until the next window
// closes, and in /control's answer.
func TestPaceSpeedMeasured(t *testing.T) {
	ctl := &PaceControl{}
	p := newPacer(20, slog.New(slog.DiscardHandler), ctl)
	tick := sim.Time(sim.Millisecond)
	var now sim.Time
	for deadline := time.Now().Add(waitLimit); ctl.Speed() == 0; now += tick {
		if time.Now().After(deadline) {
			t.Fatalf("no speed measured in %v", waitLimit)
		}
		if err := p.wait(now); err != nil {
			t.Fatal(err)
		}
	}
	if s := ctl.Speed(); s <= 0 || s > 20*1.05 {
		t.Fatalf("speed %v of a run paced at 20x", s)
	}
	body := httptest.NewRecorder()
	view.LivePages(ctl, 20).ServeHTTP(body, httptest.NewRequest("GET", "/control", nil))
	var c struct{ Speed float64 }
	if err := json.Unmarshal(body.Body.Bytes(), &c); err != nil || c.Speed != ctl.Speed() {
		t.Fatalf("/control says %q (%v), want speed %v", body.Body.String(), err, ctl.Speed())
	}
	if err := ctl.SetFactor(10); err != nil {
		t.Fatal(err)
	}
	if s := ctl.Speed(); s != 0 {
		t.Fatalf("speed %v right after a change, want 0 until measured again", s)
	}
}
