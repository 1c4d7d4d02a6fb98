package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	waitFor(t, ctx, "the replay starts", `window.skyloop && window.skyloop.replay && window.skyloop.vehicles === 4`)
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

// TestHostileRunDirectoryInChromium replays, in headless Chromium, a run
// directory someone else doctored: uav-1's flight mode in vehicles.csv,
// an event's detail and the scenario's name are HTML that runs script
// (<img src=x onerror=...>). On fc3ddb2 the panel put the mode in with
// innerHTML and the script ran. Now the page shows it as text, makes no
// element of it, and the Content-Security-Policy would block the handler
// anyway: HTML slipped into the page by other means runs nothing and is
// reported as a violation.
func TestHostileRunDirectoryInChromium(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), "run")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, dir)
	const mode = `<img src=x onerror=window.pwned=1>`
	rewrite := func(name string, f func(rec []string, col map[string]int)) {
		file := filepath.Join(dir, name)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for _, rec := range recs[1:] {
			f(rec, col)
		}
		var out bytes.Buffer
		w := csv.NewWriter(&out)
		w.WriteAll(recs)
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rewrite("vehicles.csv", func(rec []string, col map[string]int) {
		if rec[col["id"]] == "1" {
			rec[col["mode"]] = mode
		}
	})
	rewrite("events.csv", func(rec []string, col map[string]int) {
		rec[col["detail"]] = `<img src=x onerror=window.pwned2=1>`
	})
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(sum, &doc)
	doc["scenario"] = `<img src=x onerror=window.pwned3=1>`
	sum, _ = json.Marshal(doc)
	os.WriteFile(filepath.Join(dir, "summary.json"), sum, 0o644)

	rep, err := view.LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
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
	waitFor(t, ctx, "the replay starts", `window.skyloop && window.skyloop.replay && window.skyloop.vehicles === 4`)
	eval(`document.getElementById("play").click()`) // pause at the time sought
	eval(`window.skyloop.seek(3.5)`)
	eval(`window.skyloop.select("uav-1")`)
	waitFor(t, ctx, "the panel shows uav-1", `window.skyloop.panel().includes("uav-1")`)
	// Let an image of the same (missing) source fail to load, as the
	// hostile one would: by then its handler would have run.
	eval(`(() => { const i = new Image(); i.addEventListener("error", () => { window.canary = true; }); i.src = "x"; })()`)
	waitFor(t, ctx, "the canary image fails to load", `window.canary === true`)
	if n := eval(`document.querySelectorAll("#panel img, #title img").length`).(float64); n != 0 {
		t.Errorf("the page made %v img elements of the run's text", n)
	}
	if got := eval(`[window.pwned, window.pwned2, window.pwned3].filter(v => v !== undefined).length`).(float64); got != 0 {
		t.Errorf("the run directory's HTML ran script in the page (%v handlers)", got)
	}
	waitFor(t, ctx, "the panel shows uav-1's mode as text", `window.skyloop.panel().includes("`+mode+`")`)
	waitFor(t, ctx, "the events show the detail as text", `document.getElementById("log").textContent.includes("onerror=window.pwned2")`)
	waitFor(t, ctx, "the title shows the scenario as text", `document.getElementById("title").textContent.includes("onerror=window.pwned3")`)
	if errs := eval(`window.skyloop.errors`).([]any); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
	// The policy: HTML with an inline handler put into the page runs
	// nothing and is reported.
	eval(`document.getElementById("log").insertAdjacentHTML("beforeend", '<img src="x" onerror="window.inline = 1">')`)
	waitFor(t, ctx, "the Content-Security-Policy reports the inline handler", `window.skyloop.errors.some(e => e.startsWith("CSP: script-src"))`)
	if v := eval(`window.inline === undefined`).(bool); !v {
		t.Error("an inline event handler ran despite the Content-Security-Policy")
	}
}
