package sweep

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	stdhtml "html"

	"skyloop/internal/hostile"
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

// writeSweepDir writes an experiment directory by hand: a summary.csv of
// one variant and seed, and figures/ with one real PNG.
func writeSweepDir(t *testing.T) (root, exp string) {
	t.Helper()
	root = t.TempDir()
	exp = filepath.Join(root, "runs", "s")
	if err := os.MkdirAll(filepath.Join(exp, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(exp, "summary.csv"), []byte("experiment,variant,value,seed,pdr\ns,a,,1,0.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(exp, "figures", "real.png"), filepath.Join(root, "outside.png")} {
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, exp
}

// inlined returns the figures a page inlines, decoded.
func inlined(t *testing.T, page []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(stdhtml.UnescapeString(string(page)), -1) {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestSweepReportInlinesOnlyPNGFilesInside: a figure that is a link to a
// file outside the experiment (/etc/passwd, or a PNG elsewhere), a file
// that is not a PNG, or a figures directory that links elsewhere is not
// inlined: the page says which and why, and holds only the real figure.
func TestSweepReportInlinesOnlyPNGFilesInside(t *testing.T) {
	root, exp := writeSweepDir(t)
	fig := filepath.Join(exp, "figures")
	for name, target := range map[string]string{"leak.png": "/etc/passwd", "elsewhere.png": "../../../outside.png"} {
		if err := os.Symlink(target, filepath.Join(fig, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fig, "fake.png"), []byte("<script>alert(1)</script>"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second experiment whose figures directory is a link out of it.
	other := filepath.Join(root, "runs", "t")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(other, "summary.csv"), []byte("experiment,variant,value,seed,pdr\nt,a,,1,0.9\n"), 0o644)
	if err := os.Symlink(fig, filepath.Join(other, "figures")); err != nil {
		t.Fatal(err)
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	for _, at := range []string{filepath.Join(root, "runs"), exp} {
		page, err := ReportHTML(at)
		if err != nil {
			t.Fatal(err)
		}
		imgs := inlined(t, page)
		if len(imgs) != 1 {
			t.Errorf("%s: %d figures inlined, want the one real PNG", at, len(imgs))
		}
		for _, b := range imgs {
			if len(passwd) > 0 && bytes.Equal(b, passwd) {
				t.Errorf("%s: the page holds /etc/passwd", at)
			}
		}
		for _, want := range []string{"figures/leak.png not inlined", "figures/elsewhere.png not inlined", "figures/fake.png not inlined: not a PNG file"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("%s: the page does not say %q", at, want)
			}
		}
	}
}

// TestSweepReportRefusesDevices: a figure or a summary.csv on a device is
// refused at a bounded cost.
func TestSweepReportRefusesDevices(t *testing.T) {
	root, exp := writeSweepDir(t)
	if err := os.Symlink("/dev/zero", filepath.Join(exp, "figures", "zero.png")); err != nil {
		t.Fatal(err)
	}
	var page []byte
	var err error
	alloc := hostile.Allocated(func() { page, err = ReportHTML(root + "/runs") })
	if err != nil || !strings.Contains(string(page), "figures/zero.png not inlined") || alloc > hostile.MaxAlloc {
		t.Errorf("a figure on /dev/zero: %v, %d MB", err, alloc>>20)
	}
	os.Remove(filepath.Join(exp, "summary.csv"))
	if err := os.Symlink("/dev/zero", filepath.Join(exp, "summary.csv")); err != nil {
		t.Fatal(err)
	}
	alloc = hostile.Allocated(func() { _, err = ReportHTML(exp) })
	if err == nil || !strings.Contains(err.Error(), "summary.csv") || alloc > hostile.MaxAlloc {
		t.Errorf("summary.csv on /dev/zero: %v, %d MB", err, alloc>>20)
	}
}

// TestSummaryTableBounded: a summary.csv of one endless line (a sparse
// file) is refused naming it, at a bounded cost.
func TestSummaryTableBounded(t *testing.T) {
	_, exp := writeSweepDir(t)
	p := filepath.Join(exp, "summary.csv")
	if err := os.Truncate(p, 512<<20); err != nil {
		t.Fatal(err)
	}
	var err error
	alloc := hostile.Allocated(func() { _, _, _, err = Table(p) })
	if err == nil || !strings.Contains(err.Error(), p) || alloc > hostile.MaxAlloc {
		t.Errorf("a summary.csv of one 512 MiB line: %v, %d MB", err, alloc>>20)
	}
	t.Logf("allocated %d KiB", alloc>>10)
}
