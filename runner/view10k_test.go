package runner

import (
	"fmt"
	"testing"
	"time"
)

// swarm10kYAML is 10,000 point-mass vehicles on a 20 m grid flying a
// square, beaconing every 2 s over an impaired network with a 30 m range
// (a few neighbours each), paced at real time: cheap to simulate, heavy
// for a page that took every vehicle's messages.
const swarm10kYAML = `
name: swarm-10k-view
seed: 5
duration: 1200s
tick: 1ms
realtime: 1
outputs: {trace: false, deliveries: false, vehicles: false, plots: false}
vehicles:
  - name: uav
    kind: pointmass
    count: 10000
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 20, columns: 100}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[20, 0, 0], [20, 20, 5], [0, 20, 0], [0, 0, 0]]}
      - {type: beacon, period: 2s}
network: {backend: impair, latency: 5ms, range: 30}
`

// TestSwarm10kViewInChromium opens the live view of a 10,000-vehicle run:
// the page stays responsive (every look below is a JavaScript round trip
// that must answer while the data flows, and frames keep being drawn),
// shows a marker for every vehicle, keeps far fewer than 10,000 buttons
// (a search finds a vehicle), takes the batched topics and the selected
// vehicle's telemetry only, and selection still works. On the code before
// the thinning the page subscribed to every vehicle's telemetry and fix
// and made 10,000 buttons and trails.
func TestSwarm10kViewInChromium(t *testing.T) {
	pace := &PaceControl{}
	srv, _ := liveRun(t, swarm10kYAML, pace, 1)
	ctx, console := openPage(t, srv, "?view=top")
	eval := evaluator(t, ctx)
	waitFor(t, ctx, "the page shows the 10,000 vehicles", `window.skyloop && window.skyloop.vehicles === 10000`)
	waitFor(t, ctx, "a marker for every vehicle", `window.skyloop.view().markers === 10000 && document.getElementById("overlay").hidden`)
	if n := eval(`document.querySelectorAll("button").length`).(float64); n > 100 {
		t.Errorf("the page has %v buttons, want far fewer than 10,000", n)
	}
	if n := eval(`window.skyloop.listed().length`).(float64); n != 50 {
		t.Errorf("the vehicle list shows %v names, want 50", n)
	}
	if s := eval(`document.getElementById("vehicles-more").textContent`).(string); s != "and 9950 more: type to find" {
		t.Errorf("under the list: %q", s)
	}
	subs := eval(`window.skyloop.subscribed().sort().join(" ")`).(string)
	if want := "/events /scene /skyloop/network /skyloop/positions"; subs != want {
		t.Errorf("the page takes %q, want %q", subs, want)
	}
	// Data flows and the page keeps up: simulated time and frames go on.
	t0, f0 := eval(`window.skyloop.simTime`).(float64), eval(`window.skyloop.frames()`).(float64)
	waitFor(t, ctx, "simulated time goes on", fmt.Sprintf(`window.skyloop.simTime > %v + 1`, t0))
	waitFor(t, ctx, "frames are drawn", fmt.Sprintf(`window.skyloop.frames() > %v + 10`, f0))
	// Find uav-9876 and select it from the list.
	eval(`window.skyloop.find("uav-9876")`)
	if got := eval(`window.skyloop.listed().join(" ")`).(string); got != "uav-9876" {
		t.Errorf("searching uav-9876 lists %q", got)
	}
	eval(`document.querySelector("#vehicles button").click()`)
	waitFor(t, ctx, "uav-9876 is selected, its telemetry shown", `(p => window.skyloop.view().selected === "uav-9876" && p.includes("uav-9876") && p.includes("mode"))(window.skyloop.panel())`)
	subs = eval(`window.skyloop.subscribed().filter(s => s.endsWith("/telemetry")).join(" ")`).(string)
	if subs != "/vehicles/uav-9876/telemetry" {
		t.Errorf("after selecting uav-9876 the page takes the telemetry of %q", subs)
	}
	// Another selection moves the subscription and the trail.
	eval(`window.skyloop.select("uav-17")`)
	waitFor(t, ctx, "uav-17's telemetry shown", `window.skyloop.panel().includes("uav-17")`)
	subs = eval(`window.skyloop.subscribed().filter(s => s.endsWith("/telemetry")).join(" ")`).(string)
	if subs != "/vehicles/uav-17/telemetry" {
		t.Errorf("after selecting uav-17 the page takes the telemetry of %q", subs)
	}
	if n := eval(`window.skyloop.trails()`).(float64); n != 1 {
		t.Errorf("%v trails, want the selected vehicle's only", n)
	}
	waitFor(t, ctx, "uav-17's trail grows", `window.skyloop.trail("uav-17").points > 1`)
	// Responsive while the data flows: round trips answer, a second's
	// worth of frames at a time.
	for i := 0; i < 5; i++ {
		f := eval(`window.skyloop.frames()`).(float64)
		waitFor(t, ctx, "frames go on", fmt.Sprintf(`window.skyloop.frames() > %v`, f))
	}
	b0, fr0, w0 := eval(`window.skyloop.bytes`).(float64), eval(`window.skyloop.frames()`).(float64), time.Now()
	waitFor(t, ctx, "more data comes", fmt.Sprintf(`window.skyloop.bytes > %v + 1e6`, b0))
	secs := time.Since(w0).Seconds()
	t.Logf("10,000 vehicles: %.0f KiB/s from the server, %.1f frames/s (logged, not asserted)",
		(eval(`window.skyloop.bytes`).(float64)-b0)/secs/1024, (eval(`window.skyloop.frames()`).(float64)-fr0)/secs)
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("the page recorded script errors: %v", errs)
	}
	if c := console(); len(c) > 0 {
		t.Errorf("console errors: %v", c)
	}
}
