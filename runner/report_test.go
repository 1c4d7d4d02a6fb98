package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	stdhtml "html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"skyloop/engine"
	"skyloop/report"
)

// TestRunReportHTML writes the HTML report of a run with every file on
// (multirotors, Wi-Fi beacons, an obstacle): the tables are there and
// every figure is an inlined PNG that decodes, and the page runs no
// script; then headless Chromium opens it and every image loads.
func TestRunReportHTML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, dir)
	page, err := report.RunHTML(dir)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if strings.Contains(html, "<script") {
		t.Error("the report should need no script")
	}
	for _, want := range []string{`<table id="network">`, `<table id="vehicles">`, "uav-3", "Latency CDF", "PDR over time",
		"Age of information per receiver/source pair", "Trajectories", "Altitude profile"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	// Attribute values are HTML-escaped (a + is &#43;): unescape first.
	imgs := regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(stdhtml.UnescapeString(html), -1)
	if len(imgs) != 5 {
		t.Fatalf("%d inlined figures, want 5", len(imgs))
	}
	for i, m := range imgs {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatalf("figure %d: %v", i, err)
		}
		if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 300 {
			t.Fatalf("figure %d is not a PNG of a figure: %v", i, err)
		}
	}
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	abs, _ := filepath.Abs(file)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	title, err := chromedp.Run(tctx, chromedp.Title())
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	loaded, err := chromedp.Run(tctx, chromedp.Evaluate[int](`Array.from(document.images).filter(i => i.complete && i.naturalWidth > 300).length`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if loaded != 5 || !strings.Contains(title, "mcap-check") {
		t.Errorf("chromium loaded %d of 5 figures, title %q", loaded, title)
	}
}
