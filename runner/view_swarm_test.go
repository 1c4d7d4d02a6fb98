package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/sim"
	"skyloop/view"
)

// liveRun starts scenario text as a live run served with the web view on
// a fresh server (paced as text says, under pace's control) and stops it
// when the test ends. The returned clock holds the latest simulated time
// the run has handed the server.
func liveRun(t *testing.T, text string, pace *PaceControl, realtime float64) (*foxglove.Server, *liveClock) {
	t.Helper()
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.LivePages(pace, realtime)})
	if err != nil {
		t.Fatal(err)
	}
	sink := &liveClock{Server: srv}
	var stop atomic.Bool
	r := buildYAML(t, text, engine.Options{Registry: registry, Workers: 1})
	r.SetOptions(engine.Options{Stop: stop.Load})
	done := make(chan error, 1)
	go func() {
		_, err := Execute(r, filepath.Join(t.TempDir(), "run"), Options{Live: sink, Pace: pace})
		done <- err
	}()
	t.Cleanup(func() {
		stop.Store(true)
		if err := <-done; err != nil && !errors.Is(err, sim.ErrStopped) {
			t.Errorf("run: %v", err)
		}
		srv.Close()
	})
	return srv, sink
}

// liveClock is the server, noting the latest simulated time it is given.
type liveClock struct {
	*foxglove.Server
	now atomic.Int64
}

func (c *liveClock) Message(ch uint16, key int, t sim.Time, data []byte) {
	if int64(t) > c.now.Load() {
		c.now.Store(int64(t))
	}
	c.Server.Message(ch, key, t, data)
}

// openPage opens the live view of srv in a fresh headless Chromium and
// collects the page's console errors (three.js reports misuse there, not
// as exceptions).
func openPage(t *testing.T, srv *foxglove.Server, query string) (context.Context, func() []string) {
	t.Helper()
	ctx := browser(t)
	var mu sync.Mutex
	var console []string
	listenErr(t, ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventConsoleAPICalled); ok && e.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			mu.Lock()
			console = append(console, strings.Join(parts, " "))
			mu.Unlock()
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+srv.Addr()+"/"+query), chromedp.WaitReady("#panel")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), console...) }
}

// listenErr calls fn with the page's events, failing the test if it cannot.
func listenErr(t *testing.T, ctx context.Context, fn func(ev any)) {
	t.Helper()
	if err := chromedp.Listen(ctx, fn); err != nil {
		t.Fatalf("listening to the page: %v", err)
	}
}

// TestLiveViewReconnects: the server drops the page (as a write that
// times out on a busy machine does, foxglove.Server.DropClients), twice;
// each time the page reconnects by itself, gets the channels and latest
// states again, and shows the run live: simulated time goes on and the
// vehicles move. On 99cf37e the page said "disconnected" for good.
func TestLiveViewReconnects(t *testing.T) {
	text := strings.Replace(mcapYAML, "duration: 4s", "duration: 1200s\nrealtime: 2", 1)
	pace := &PaceControl{}
	srv, _ := liveRun(t, text, pace, 2)
	ctx, console := openPage(t, srv, "")
	eval := evaluator(t, ctx)
	waitFor(t, ctx, "the page shows the 4 vehicles live", `window.skyloop && window.skyloop.vehicles === 4 && document.getElementById("status").textContent === "live"`)
	for drop := 1; drop <= 2; drop++ {
		before := eval(`window.skyloop.simTime`).(float64)
		if n := srv.DropClients(); n != 1 {
			t.Fatalf("drop %d: the server dropped %d clients, want the page", drop, n)
		}
		waitFor(t, ctx, fmt.Sprintf("drop %d: the page reconnects (status %q)", drop, "live"),
			fmt.Sprintf(`document.getElementById("status").textContent === "live" && window.skyloop.view && window.skyloop.view().reconnects === %d`, drop))
		// Live again: simulated time goes on well past the drop, and the
		// vehicles are where the server says (they move).
		waitFor(t, ctx, fmt.Sprintf("drop %d: simulated time goes on", drop), fmt.Sprintf(`window.skyloop.simTime > %v`, before+2))
		first := eval(`JSON.stringify(window.skyloop.positions())`).(string)
		waitFor(t, ctx, fmt.Sprintf("drop %d: the vehicles move", drop), `JSON.stringify(window.skyloop.positions()) !== `+strconv.Quote(first))
		if n, subs := srv.Clients(); n != 1 || subs == 0 {
			t.Errorf("drop %d: %d clients with %d subscriptions after reconnecting, want the page, subscribed", drop, n, subs)
		}
	}
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	if c := console(); len(c) > 0 {
		t.Errorf("console errors: %v", c)
	}
}

// holdStill waits until the page of a paused run has drawn its last
// state: every vehicle's place on screen stays the same over two reads
// 300 ms apart, with frames drawn between them.
func holdStill(t *testing.T, eval func(string) any) {
	t.Helper()
	const places = `JSON.stringify(Object.keys(window.skyloop.positions()).map(n => window.skyloop.screen(n)))`
	last, frames := "", 0.0
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(300 * time.Millisecond) {
		at, f := eval(places).(string), eval(`window.skyloop.frames()`).(float64)
		if at == last && f > frames {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the vehicles still move on the page of a paused run")
		}
		last, frames = at, f
	}
}

// speedRe reads the speed the panel shows: "1.02x real time (set 1x)".
var speedRe = regexp.MustCompile(`^([0-9.]+)x real time`)

// TestLiveViewTrueSpeed: the run first races (factor 1000) to 20 s of
// simulated time, then is paced at 1x, and the page opens only then.
// Every speed the panel shows must be at most about 1x: on 99cf37e the
// first figure counted the 20 s the page had missed (20x and more, as the
// "18.5x real time" of a 1x run in the issue). A busy machine may hold
// the run below 1x, so the figures are also compared with the speed the
// test itself measures over the same simulated seconds: within a factor
// of two of it.
func TestLiveViewTrueSpeed(t *testing.T) {
	text := strings.Replace(mcapYAML, "duration: 4s", "duration: 1200s\nrealtime: 1", 1)
	pace := &PaceControl{}
	if err := pace.SetFactor(MaxFactor); err != nil {
		t.Fatal(err)
	}
	srv, clock := liveRun(t, text, pace, 1)
	for deadline := time.Now().Add(waitLimit); clock.now.Load() < int64(20*time.Second); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run reached only %v in %v", time.Duration(clock.now.Load()), waitLimit)
		}
	}
	if err := pace.SetFactor(1); err != nil {
		t.Fatal(err)
	}
	ctx, _ := openPage(t, srv, "")
	eval := evaluator(t, ctx)
	waitFor(t, ctx, "the page shows the vehicles live", `window.skyloop && window.skyloop.vehicles === 4`)
	var seen []string
	var shown []float64
	start := -1.0
	var wallStart time.Time
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
		got := eval(`[document.getElementById("speed").textContent, window.skyloop.simTime]`).([]any)
		text, now := got[0].(string), got[1].(float64)
		if m := speedRe.FindStringSubmatch(text); m != nil {
			if len(seen) == 0 || seen[len(seen)-1] != text {
				seen = append(seen, text)
			}
			f, _ := strconv.ParseFloat(m[1], 64)
			if f <= 0 || f > 1.5 {
				t.Fatalf("the panel says %q of a run paced at 1x (figures so far %q)", text, seen)
			}
			shown = append(shown, f)
			if !strings.Contains(text, "(set 1x)") {
				t.Errorf("the panel says %q: want the pace set, (set 1x)", text)
			}
			if start < 0 {
				start, wallStart = now, time.Now()
			}
			if now-start >= 4 { // four simulated seconds of figures
				true := (now - start) / time.Since(wallStart).Seconds()
				for _, f := range shown {
					if f > 2*true || f < true/2 {
						t.Fatalf("the panel says %vx while the run went at %.2fx (figures %q)", f, true, seen)
					}
				}
				t.Logf("true speed %.2fx", true)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the panel showed %q in %v", seen, waitLimit)
		}
	}
	t.Logf("speeds shown: %q", seen)
}

// swarm100YAML is 100 vehicles in a 10 by 10 grid flying a square, beaconing
// twice a second over a lossy network with a range, so that some links
// are weak.
const swarm100YAML = `
name: swarm-view
seed: 3
duration: 1200s
tick: 1ms
realtime: 1
vehicles:
  - name: uav
    kind: multirotor
    count: 100
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 8}
    params: {preset: iris}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[30, 0, 0], [30, 30, 5], [0, 30, 0]]}
      - {type: beacon, period: 500ms, stagger: 5ms, format: planar}
network: {backend: impair, loss: 0.3, range: 40}
`

// TestSwarmViewInChromium shows a live run of 100 vehicles: the markers
// are drawn at a fixed size on screen (the pixels at the vehicles' places
// have their colours), a vehicle is named on hover and when selected (a
// real click picks it), the follow camera keeps it at the centre, the
// link layer shows the selected vehicle's links by default at this size,
// all, the weak ones or none, and the scale bar shows a round length. It
// logs the frame rate and the bytes per second the page gets.
func TestSwarmViewInChromium(t *testing.T) {
	pace := &PaceControl{}
	srv, _ := liveRun(t, swarm100YAML, pace, 1)
	ctx, console := openPage(t, srv, "?view=top")
	eval := evaluator(t, ctx)
	waitFor(t, ctx, "the page shows the 100 vehicles", `window.skyloop && window.skyloop.vehicles === 100`)
	waitFor(t, ctx, "links are heard", `Number(document.getElementById("links").textContent.split(" ")[0]) > 50`)
	v := func() map[string]any { return eval(`window.skyloop.view()`).(map[string]any) }
	st := v()
	if st["linkMode"] != "selected" || st["linksDrawn"].(float64) != 0 || st["selectedLabel"] != nil {
		t.Errorf("at 100 vehicles the page starts with %v: want the links of the selected vehicle (none selected: none drawn), no label", st)
	}
	// The scale bar: a round length, 40 to 200 pixels long.
	if s := st["scale"].(string); !regexp.MustCompile(`^(1|2|5)0* (m|km) · grid [0-9.]+ m$`).MatchString(s) || st["scalePx"].(float64) < 40 || st["scalePx"].(float64) > 200 {
		t.Errorf("scale bar %q, %v px", s, st["scalePx"])
	}

	// Hover over uav-37 with the mouse: its name shows. The run is paused
	// meanwhile: a vehicle flying at 5 m/s crosses its marker in a
	// fraction of a second, so on a busy machine the page could move it
	// away between reading its place and the mouse getting there.
	pace.Pause(true)
	holdStill(t, eval)
	xy := eval(`window.skyloop.screen("uav-37")`).([]any)
	x, y := xy[0].(float64), xy[1].(float64)
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "hovering names uav-37", `window.skyloop.view().hover === "uav-37"`)
	// Click it: it is selected, labelled, ringed; its links are drawn,
	// fewer than all.
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x, y)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the click selects uav-37, labelled", `(v => v.selected === "uav-37" && v.selectedLabel === "uav-37")(window.skyloop.view())`)
	pace.Pause(false)
	waitFor(t, ctx, "uav-37's links are drawn", `window.skyloop.view().linksDrawn > 0`)
	heardNow := func() float64 {
		f, _ := strconv.ParseFloat(strings.SplitN(eval(`document.getElementById("links").textContent`).(string), " ", 2)[0], 64)
		return f
	}
	if drawn, heard := v()["linksDrawn"].(float64), heardNow(); drawn >= heard || drawn > 2*99 {
		t.Errorf("the selected vehicle's links: %v drawn of %v heard", drawn, heard)
	}
	eval(`window.skyloop.links("all")`)
	waitFor(t, ctx, "all links drawn", `(v => v.linksDrawn > 0 && document.getElementById("links").textContent === String(v.linksDrawn))(window.skyloop.view())`)
	eval(`window.skyloop.links("weak", 0.5)`)
	waitFor(t, ctx, "the weak links only", `(v => v.linkMode === "weak" && v.linksDrawn < Number(document.getElementById("links").textContent.split(" ")[0]))(window.skyloop.view())`)
	eval(`window.skyloop.links("off")`)
	waitFor(t, ctx, "the link layer off", `(v => !v.linksVisible && v.linksDrawn === 0)(window.skyloop.view())`)
	eval(`window.skyloop.links("selected")`)

	// Follow: the camera looks at uav-37 as it flies.
	eval(`window.skyloop.follow(true)`)
	waitFor(t, ctx, "the camera follows uav-37", `(() => { const v = window.skyloop.view(), p = window.skyloop.positions()["uav-37"];
		return Math.hypot(v.target[0] - p[0], v.target[1] - p[1], v.target[2] - p[2]) < 1e-6; })()`)
	waitFor(t, ctx, "uav-37 at the centre of the scene", `(p => Math.abs(p[0] - document.getElementById("scene").clientWidth / 2) < 2 && Math.abs(p[1] - document.getElementById("scene").clientHeight / 2) < 2)(window.skyloop.screen("uav-37"))`)

	// The picture: not blank, and the markers are there, in their colours
	// (a simple pixel check at each vehicle's place on screen).
	frames0, bytes0, t0 := eval(`window.skyloop.frames()`).(float64), eval(`window.skyloop.bytes`).(float64), time.Now()
	eval(`window.skyloop.follow(false)`)
	// Paused while the places are read and the picture taken: on a busy
	// machine the page may draw a frame or two between them.
	pace.Pause(true)
	holdStill(t, eval)
	defer pace.Pause(false)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	places := eval(`Object.keys(window.skyloop.positions()).map(n => [n, window.skyloop.screen(n), window.skyloop.markerColor(n)])`).([]any)
	shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "swarm.png")
	os.WriteFile(file, shot, 0o644)
	if d := os.Getenv("SKYLOOP_SCREENSHOTS"); d != "" { // keep it (for the docs)
		os.WriteFile(filepath.Join(d, "view-swarm-100.png"), shot, 0o644)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if n := colours(img); n < 20 {
		t.Errorf("the screenshot (%s) has %d colours: blank?", file, n)
	}
	onScreen, marked := 0, 0
	w, h := float64(img.Bounds().Dx()), float64(img.Bounds().Dy())
	for _, p := range places {
		q := p.([]any)
		xy, ok := q[1].([]any)
		if !ok {
			continue
		}
		px, py := xy[0].(float64), xy[1].(float64)
		if px < 8 || py < 8 || px > w*0.6 || py > h-8 { // the panel covers the right
			continue
		}
		onScreen++
		if near(img, int(px), int(py), q[2].(string)) {
			marked++
		}
	}
	if onScreen < 50 || float64(marked) < 0.8*float64(onScreen) {
		t.Errorf("%d of %d vehicles on screen have a marker of their colour at their place (%s)", marked, onScreen, file)
	}
	secs := time.Since(t0).Seconds()
	fps := (eval(`window.skyloop.frames()`).(float64) - frames0) / secs
	kbps := (eval(`window.skyloop.bytes`).(float64) - bytes0) / secs / 1024
	t.Logf("100 vehicles: %d of %d markers found on screen; %.1f frames/s, %.0f KiB/s from the server; screenshot %s", marked, onScreen, fps, kbps, file)
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	if c := console(); len(c) > 0 {
		t.Errorf("console errors: %v", c)
	}
}

// colours counts the distinct colours (4 bits a channel) of a sample of
// img's pixels.
func colours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
		}
	}
	return len(seen)
}

// near reports whether a pixel within 2 of (x, y) has colour hex
// ("#rrggbb"), give or take 48 a channel.
func near(img image.Image, x, y int, hex string) bool {
	c, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		return false
	}
	want := [3]int{int(c >> 16 & 255), int(c >> 8 & 255), int(c & 255)}
	for dy := -2; dy <= 2; dy++ {
		for dx := -2; dx <= 2; dx++ {
			r, g, b, _ := img.At(x+dx, y+dy).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			ok := true
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > 48 {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// TestReplayTrailsAndWords replays a run in Chromium with its run.json
// held back: the page says it is loading (not "connecting…"); then, with
// trails on, the trails follow seeks forwards and back (on 99cf37e a
// seek to a longer trail failed with "THREE.BufferGeometry: Buffer size
// too small" and left the trail as it was), and events read in words.
func TestReplayTrailsAndWords(t *testing.T) {
	ctx := browser(t)
	var console []string
	var mu sync.Mutex
	listenErr(t, ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventConsoleAPICalled); ok && e.Type == runtime.ConsoleAPICalledTypeError {
			mu.Lock()
			for _, a := range e.Args {
				console = append(console, string(a.Value)+a.Description)
			}
			mu.Unlock()
		}
	})
	dir := filepath.Join(t.TempDir(), "run")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, dir)
	rep, err := view.LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := view.ReplayPages(rep, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/run.json" {
			<-release
		}
		pages.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#panel")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	eval := evaluator(t, ctx)
	waitFor(t, ctx, "the page says it is loading", `(o => o && o.textContent.startsWith("loading") && !o.hidden)(document.getElementById("overlay"))`)
	if s := eval(`document.getElementById("status").textContent`).(string); strings.Contains(s, "connect") {
		t.Errorf("while run.json loads the status says %q", s)
	}
	free()
	waitFor(t, ctx, "the replay starts", `window.skyloop.replay && window.skyloop.vehicles === 4 && document.getElementById("overlay").hidden`)
	eval(`document.getElementById("play").click()`) // pause: time moves only by seeks
	counts := map[float64]float64{}
	for _, sec := range []float64{0.5, 3.5, 0.2, 3.9} {
		eval(fmt.Sprintf(`window.skyloop.seek(%v)`, sec))
		tr := eval(`window.skyloop.trail("uav-0")`).(map[string]any)
		pos := eval(`window.skyloop.positions()["uav-0"]`).([]any)
		n := tr["points"].(float64)
		counts[sec] = n
		last, _ := tr["last"].([]any)
		off := math.Inf(1) // the trail is float32
		if last != nil {
			off = math.Abs(last[0].(float64)-pos[0].(float64)) + math.Abs(last[1].(float64)-pos[1].(float64)) + math.Abs(last[2].(float64)-pos[2].(float64))
		}
		if n < 1 || off > 1e-3 || tr["visible"] != true {
			t.Errorf("at %v s uav-0's trail is %v, the vehicle at %v", sec, tr, pos)
		}
	}
	if !(counts[3.5] > counts[0.5] && counts[0.5] > counts[0.2] && counts[3.9] > counts[3.5]) {
		t.Errorf("trail points after seeks to 0.5, 3.5, 0.2, 3.9 s: %v; want them to follow time", counts)
	}
	for detail, want := range map[[2]string]string{
		{"command", "leg=1 op=1 latency_ns=10000000"}: "command: leg 1 op 1, 10 ms latency",
		{"leg_done", "vehicle=3 leg=2"}:               "leg done: vehicle 3 leg 2",
		{"param", "MPC_XY_VEL_MAX=12"}:                "param: MPC_XY_VEL_MAX=12",
		{"takeoff", ""}:                               "takeoff",
		{"command", "latency_ns=1500000000"}:          "command: 1.5 s latency",
	} {
		if got := eval(fmt.Sprintf(`window.skyloop.describe(%q, %q)`, detail[0], detail[1])); got != want {
			t.Errorf("describe(%q, %q) = %q, want %q", detail[0], detail[1], got, want)
		}
	}
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(console) > 0 {
		t.Errorf("console errors: %v", console)
	}
}
