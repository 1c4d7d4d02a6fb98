package sweep

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	stdhtml "html"

	"skyloop/sim"
)

// TestSweepReportHTML: the report of a sweep has, per experiment, the
// table of every variant (mean ± std) and every figure of the experiment
// inlined as a PNG that decodes.
func TestSweepReportHTML(t *testing.T) {
	e := mustParse(t, "s.yaml", `
experiment: s
scenario: platoon.yaml
seeds: 2
variants:
  - {name: clean, set: {network.loss: 0}}
  - {name: lossy, set: {network.loss: 0.3}}
`)
	dir := t.TempDir()
	if _, err := Sweep(e, Options{Out: dir, Duration: 6 * sim.Second, NoFiles: true}); err != nil {
		t.Fatal(err)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "s", "figures", "*.png"))
	if len(pngs) == 0 {
		t.Fatal("the sweep made no figures")
	}
	for _, at := range []string{dir, filepath.Join(dir, "s")} {
		page, err := ReportHTML(at)
		if err != nil {
			t.Fatal(err)
		}
		html := string(page)
		for _, want := range []string{"Experiment s", "<td>clean</td>", "<td>lossy</td>", "PDR", " ± "} {
			if !strings.Contains(html, want) {
				t.Errorf("the report of %s has no %q", at, want)
			}
		}
		imgs := regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(stdhtml.UnescapeString(html), -1)
		if len(imgs) != len(pngs) {
			t.Fatalf("%d inlined figures, the experiment has %d", len(imgs), len(pngs))
		}
		for _, m := range imgs {
			b, _ := base64.StdEncoding.DecodeString(m[1])
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := ReportHTML(t.TempDir()); err == nil {
		t.Error("a directory without results gave a report")
	}
}
