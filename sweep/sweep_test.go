package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	_ "skyloop/components" // every backend and behaviour
	"skyloop/scenarios"
	"skyloop/sim"
)

// builtin finds the scenarios an experiment names among the built-in ones,
// as skyloop sweep does for the built-in experiments: first next to them
// (netbots/), then at the top level.
func builtin(name string) (string, []byte, string, error) { return builtinIn("netbots")(name) }

// builtinIn is builtin for the experiments of the collection dir.
func builtinIn(dir string) ReadScenario {
	return func(name string) (string, []byte, string, error) {
		base := strings.TrimSuffix(name, ".yaml")
		for _, n := range []string{path.Join(dir, base), base} {
			if b, ok := scenarios.Lookup(n); ok {
				return path.Base(n) + ".yaml", b, "", nil
			}
		}
		return "", nil, "", fmt.Errorf("no scenario file %q and no built-in scenario of that name", name)
	}
}

func mustParse(t testing.TB, name, text string) *Experiment {
	t.Helper()
	e, err := ParseExperiment(name, []byte(text), builtin, nil)
	if err != nil {
		t.Fatalf("%s:\n%v", name, err)
	}
	return e
}

// smallYAML is a short sweep over the platoon: 2 values x 3 seeds of 6 s,
// every impairment of the variants active, with an ideal-network
// reference that both variants share.
const smallYAML = `
experiment: small
scenario: platoon.yaml
seeds: 3
base: {duration: 6s, network.jitter: 50ms, network.loss: 0.1}
sweep: {param: network.latency, values: [1ms, 20ms]}
reference:
  network: {backend: ideal, epoch: 10ms}
  vehicles[robot].behaviors[beacon].period: 2ms
`

// tree reads every file below dir (path relative to dir -> content).
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree reports every difference between two directories' files.
func sameTree(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	bad := 0
	for _, n := range names {
		x, okx := a[n]
		y, oky := b[n]
		switch {
		case !okx || !oky:
			t.Errorf("%s: %s is only in one of the two (%v %v)", what, n, okx, oky)
		case !bytes.Equal(x, y):
			t.Errorf("%s: %s differs", what, n)
		default:
			continue
		}
		if bad++; bad > 20 {
			t.Fatalf("%s: too many differences", what)
		}
	}
}

// readSummary reads summary.csv: its header and rows.
func readSummary(t *testing.T, dir string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0], rows[1:]
}

func column(t *testing.T, header []string, name string) int {
	t.Helper()
	i := slices.Index(header, name)
	if i < 0 {
		t.Fatalf("summary.csv has no column %q (columns: %s)", name, strings.Join(header, ","))
	}
	return i
}

// rowKeys returns "variant/seed" for every row.
func rowKeys(t *testing.T, header []string, rows [][]string) []string {
	vi, si := column(t, header, "variant"), column(t, header, "seed")
	var out []string
	for _, r := range rows {
		out = append(out, r[vi]+"/"+r[si])
	}
	return out
}

// TestSweepResumes interrupts a sweep after two runs, then runs it again:
// the finished runs are not redone, summary.csv has each variant x seed
// once, and every file equals that of an uninterrupted sweep.
func TestSweepResumes(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	dir := t.TempDir()
	var done atomic.Int32
	var progress []Progress
	res, err := Sweep(e, Options{Out: dir, Workers: 1,
		Progress: func(p Progress) { progress = append(progress, p); done.Add(1) },
		Stop:     func() bool { return done.Load() >= 2 }})
	if !errors.Is(err, sim.ErrStopped) {
		t.Fatalf("first pass: %v, want sim.ErrStopped", err)
	}
	if res == nil || res.Rows != 2 || res.Ran != 2 || res.Skipped != 0 {
		t.Fatalf("first pass: %+v, want 2 runs and 2 rows", res)
	}
	exp := filepath.Join(dir, "small")
	h, rows := readSummary(t, exp)
	if got := rowKeys(t, h, rows); !slices.Equal(got, []string{"latency=1ms/1", "latency=1ms/2"}) {
		t.Fatalf("summary.csv after the interruption has rows %v", got)
	}
	if _, err := os.Stat(filepath.Join(exp, "latency=1ms", "seed3")); err == nil {
		t.Errorf("a run that never started left a directory")
	}
	if _, err := os.Stat(filepath.Join(exp, "meta.json")); err == nil {
		t.Errorf("an interrupted sweep wrote meta.json")
	}

	progress = nil
	res, err = Sweep(e, Options{Out: dir, Workers: 2, Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 2 || res.Ran != 4 || res.Rows != 6 {
		t.Fatalf("second pass: %+v, want 2 skipped, 4 ran, 6 rows", res)
	}
	var skipped []string
	for _, p := range progress {
		if p.Skipped {
			skipped = append(skipped, fmt.Sprintf("%s/%d", p.Variant, p.Seed))
		}
		if p.Total != 6 {
			t.Errorf("progress %+v: total %d, want 6", p, p.Total)
		}
	}
	if !slices.Equal(skipped, []string{"latency=1ms/1", "latency=1ms/2"}) {
		t.Errorf("second pass skipped %v, want the two finished runs", skipped)
	}
	h, rows = readSummary(t, exp)
	want := []string{"latency=1ms/1", "latency=1ms/2", "latency=1ms/3", "latency=20ms/1", "latency=20ms/2", "latency=20ms/3"}
	if got := rowKeys(t, h, rows); !slices.Equal(got, want) {
		t.Fatalf("summary.csv rows %v, want %v", got, want)
	}

	// An uninterrupted sweep writes the same files, byte for byte.
	dir2 := t.TempDir()
	if _, err := Sweep(e, Options{Out: dir2, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	resumed, whole := tree(t, exp), tree(t, filepath.Join(dir2, "small"))
	for _, f := range []string{"summary.csv", "meta.json", "figures/aoi.png", "figures/latency_cdf.png", "figures/gap_error.png",
		"latency=20ms/seed2/trace.csv", "latency=1ms/seed1/deliveries.csv", "latency=1ms/seed1/robots.csv"} {
		if _, ok := whole[f]; !ok {
			t.Errorf("the sweep wrote no %s: the comparison does not cover it", f)
		}
	}
	sameTree(t, "resumed vs uninterrupted", resumed, whole)

	// A third pass has nothing to do, and leaves the files as they are.
	res, err = Sweep(e, Options{Out: dir})
	if err != nil || res.Ran != 0 || res.Skipped != 6 || res.Rows != 6 {
		t.Fatalf("third pass: %+v %v", res, err)
	}
	sameTree(t, "third pass", resumed, tree(t, exp))

	var out strings.Builder
	if err := Summarize(&out, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "experiment small (6 runs") || !regexpLine(out.String(), `^latency=20ms\s+3\s`) {
		t.Errorf("summarize:\n%s", out.String())
	}
}

func regexpLine(s, re string) bool {
	for _, l := range strings.Split(s, "\n") {
		if regexp.MustCompile(re).MatchString(l) {
			return true
		}
	}
	return false
}

// TestSweepResumesAfterStopInRun stops a sweep in the middle of a run:
// the half-done run leaves nothing that passes for finished, and the
// resumed sweep's files equal an uninterrupted sweep's.
func TestSweepResumesAfterStopInRun(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	dir := t.TempDir()
	var calls, finished atomic.Int32
	// The engine asks Stop every tick: let the reference and the first
	// run finish, then stop the second run a little way in.
	stopAt := int32(-1)
	res, err := Sweep(e, Options{Out: dir, Workers: 1, Seeds: 2,
		Progress: func(p Progress) {
			if finished.Add(1) == 1 {
				atomic.StoreInt32(&stopAt, calls.Load()+500)
			}
		},
		Stop: func() bool {
			n := calls.Add(1)
			s := atomic.LoadInt32(&stopAt)
			return s >= 0 && n >= s
		}})
	if !errors.Is(err, sim.ErrStopped) {
		t.Fatalf("first pass: %v, want sim.ErrStopped", err)
	}
	if res.Ran != 1 || res.Rows != 1 {
		t.Fatalf("first pass: %+v, want 1 run", res)
	}
	if calls.Load() < atomic.LoadInt32(&stopAt) {
		t.Fatalf("the engine asked Stop %d times: the run was not stopped in the middle", calls.Load())
	}
	exp := filepath.Join(dir, "small")
	if finishedRun(t, filepath.Join(exp, "latency=1ms", "seed2")) {
		t.Fatalf("the stopped run passes for finished")
	}
	ents, _ := os.ReadDir(filepath.Join(exp, "latency=1ms"))
	for _, en := range ents {
		if en.Name() != "seed1" {
			t.Errorf("the stopped run left %s", en.Name())
		}
	}
	res, err = Sweep(e, Options{Out: dir, Workers: 1, Seeds: 2})
	if err != nil || res.Ran != 3 || res.Skipped != 1 || res.Rows != 4 {
		t.Fatalf("second pass: %+v %v", res, err)
	}
	dir2 := t.TempDir()
	if _, err := Sweep(e, Options{Out: dir2, Workers: 4, Seeds: 2}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "resumed vs uninterrupted", tree(t, exp), tree(t, filepath.Join(dir2, "small")))
}

func finishedRun(t *testing.T, dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	return err == nil
}

// TestSummaryCSV checks summary.csv: a row per variant x seed, in order,
// with the run's configuration (the swept value in its column) and the
// metrics; it is rebuilt, never appended to, when the sweep runs again.
func TestSummaryCSV(t *testing.T) {
	e := mustParse(t, "s.yaml", `
experiment: s
scenario: platoon.yaml
seeds: 2
base: {network.jitter: 20ms}
variants:
  - {name: lossy, set: {network.loss: 0.5}}
  - name: slow
    set:
      network.latency: 40ms
      vehicles[robot].count: 4
`)
	dir := t.TempDir()
	res, err := Sweep(e, Options{Out: dir, Duration: 6 * sim.Second, NoFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 4 || res.Ran != 4 {
		t.Fatalf("%+v", res)
	}
	exp := filepath.Join(dir, "s")
	first, err := os.ReadFile(filepath.Join(exp, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	h, rows := readSummary(t, exp)
	if got := rowKeys(t, h, rows); !slices.Equal(got, []string{"lossy/1", "lossy/2", "slow/1", "slow/2"}) {
		t.Fatalf("rows %v", got)
	}
	if !slices.Equal(h[:4], []string{"experiment", "variant", "value", "seed"}) {
		t.Errorf("header starts %v", h[:4])
	}
	seen := map[string]bool{}
	for _, c := range h {
		if seen[c] {
			t.Errorf("summary.csv has two columns named %q", c)
		}
		seen[c] = true
	}
	get := func(r []string, col string) string { return r[column(t, h, col)] }
	for _, r := range rows {
		if len(r) != len(h) {
			t.Fatalf("a row of %d fields under %d columns", len(r), len(h))
		}
		if get(r, "experiment") != "s" || get(r, "duration") != "6s" || get(r, "network.params.jitter") != "20ms" {
			t.Errorf("row %v: experiment %s, duration %s, jitter %s", r[:4], get(r, "experiment"), get(r, "duration"), get(r, "network.params.jitter"))
		}
		lossy := get(r, "variant") == "lossy"
		wantLoss, wantLat, wantN := "0.5", "100µs", "3"
		if !lossy {
			wantLoss, wantLat, wantN = "0", "40ms", "4"
		}
		if get(r, "network.params.loss") != wantLoss || get(r, "network.params.latency") != wantLat || get(r, "vehicles[0].count") != wantN {
			t.Errorf("row %v: loss %s latency %s count %s, want %s %s %s", r[:4], get(r, "network.params.loss"),
				get(r, "network.params.latency"), get(r, "vehicles[0].count"), wantLoss, wantLat, wantN)
		}
		pdr, err := strconv.ParseFloat(get(r, "pdr"), 64)
		if err != nil || pdr <= 0 || pdr > 1 || lossy && pdr > 0.7 || !lossy && pdr < 0.99 {
			t.Errorf("row %v: pdr %q", r[:4], get(r, "pdr"))
		}
		if g, err := strconv.ParseFloat(get(r, "gap_err_mean_m"), 64); err != nil || !(g > 0) {
			t.Errorf("row %v: gap_err_mean_m %q", r[:4], get(r, "gap_err_mean_m"))
		}
		tx, _ := strconv.Atoi(get(r, "state_tx"))
		// 10 Hz for 6 s per robot (the first update of robot i at i*10 ms).
		if n, _ := strconv.Atoi(wantN); tx != 60*n {
			t.Errorf("row %v: state_tx %d, want %d", r[:4], tx, 60*n)
		}
	}
	// The seeds differ, and so do their results.
	if get(rows[0], "pdr") == get(rows[1], "pdr") && get(rows[0], "aoi_mean_s") == get(rows[1], "aoi_mean_s") {
		t.Errorf("seeds 1 and 2 gave the same figures: %s %s", get(rows[0], "pdr"), get(rows[0], "aoi_mean_s"))
	}

	// Running again rebuilds the file: the same bytes, however it was left.
	if err := os.WriteFile(filepath.Join(exp, "summary.csv"), append(append([]byte(nil), first...), first...), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Sweep(e, Options{Out: dir, Duration: 6 * sim.Second, NoFiles: true})
	if err != nil || res.Ran != 0 || res.Skipped != 4 || res.Rows != 4 {
		t.Fatalf("again: %+v %v", res, err)
	}
	again, _ := os.ReadFile(filepath.Join(exp, "summary.csv"))
	if !bytes.Equal(first, again) {
		t.Fatalf("summary.csv changed when nothing ran:\n%s\n---\n%s", first, again)
	}
	// One seed more: two more rows, each run once.
	res, err = Sweep(e, Options{Out: dir, Duration: 6 * sim.Second, NoFiles: true, Seeds: 3})
	if err != nil || res.Ran != 2 || res.Skipped != 4 || res.Rows != 6 {
		t.Fatalf("three seeds: %+v %v", res, err)
	}
	h, rows = readSummary(t, exp)
	if got := rowKeys(t, h, rows); !slices.Equal(got, []string{"lossy/1", "lossy/2", "lossy/3", "slow/1", "slow/2", "slow/3"}) {
		t.Fatalf("rows %v", got)
	}
	// Another duration is another configuration: every run is redone.
	res, err = Sweep(e, Options{Out: dir, Duration: 8 * sim.Second, NoFiles: true, Seeds: 1})
	if err != nil || res.Ran != 2 || res.Skipped != 0 || res.Rows != 2 {
		t.Fatalf("8 s: %+v %v", res, err)
	}
	h, rows = readSummary(t, exp)
	for _, r := range rows {
		if get(r, "duration") != "8s" {
			t.Errorf("row %v: duration %s", r[:4], get(r, "duration"))
		}
	}
}

// TestReferenceShared checks that the ideal-network reference runs are
// cached under reference/<key>, one per distinct reference configuration,
// shared by the variants that have it and not run again; the excess gap
// error is the run's minus its reference's.
func TestReferenceShared(t *testing.T) {
	e := mustParse(t, "r.yaml", `
experiment: r
scenario: platoon.yaml
seeds: 1
variants:
  - {name: a, set: {network.latency: 10ms}}
  - {name: b, set: {network.latency: 50ms, network.loss: 0.2}}
  - name: c
    set:
      vehicles[robot].count: 4
reference:
  network: {backend: ideal, epoch: 10ms}
`)
	dir := t.TempDir()
	if _, err := Sweep(e, Options{Out: dir, Duration: 6 * sim.Second}); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "r")
	ents, err := os.ReadDir(filepath.Join(exp, "reference"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Fatalf("%d reference runs, want 2 (a and b share theirs)", len(ents))
	}
	var meta struct {
		Variants []struct {
			Name, Reference string
		} `json:"variants"`
	}
	b, err := os.ReadFile(filepath.Join(exp, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	refOf := map[string]string{}
	for _, v := range meta.Variants {
		refOf[v.Name] = v.Reference
		if _, err := os.Stat(filepath.Join(exp, v.Reference, "summary.json")); err != nil {
			t.Errorf("variant %s: reference %q: %v", v.Name, v.Reference, err)
		}
	}
	if refOf["a"] == "" || refOf["a"] != refOf["b"] || refOf["c"] == refOf["a"] || refOf["c"] == "" {
		t.Fatalf("references %v: want a and b to share one, c its own", refOf)
	}
	// The reference has the reference configuration: an ideal network.
	cfg, err := os.ReadFile(filepath.Join(exp, refOf["a"], "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg, []byte(`"backend":"ideal"`)) && !bytes.Contains(cfg, []byte(`"backend": "ideal"`)) {
		t.Errorf("reference config.json: %s", cfg)
	}
	// The excess is measured against the right reference.
	refGap := func(ref string) float64 {
		b, err := os.ReadFile(filepath.Join(exp, ref, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Measures map[string]struct {
				GapErrMeanM float64 `json:"gap_err_mean_m"`
			} `json:"measures"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Measures["platoon"].GapErrMeanM
	}
	h, rows := readSummary(t, exp)
	for _, r := range rows {
		v := r[column(t, h, "variant")]
		mean, _ := strconv.ParseFloat(r[column(t, h, "gap_err_mean_m")], 64)
		excess, _ := strconv.ParseFloat(r[column(t, h, "gap_err_excess_m")], 64)
		ref := refGap(refOf[v])
		if ref <= 0 || excess != mean-ref {
			t.Errorf("variant %s: gap error %v, excess %v, reference %v", v, mean, excess, ref)
		}
		if dev, _ := strconv.ParseFloat(r[column(t, h, "traj_dev_mean_m")], 64); !(dev > 0) {
			t.Errorf("variant %s: trajectory deviation %v", v, dev)
		}
	}
	// Run again: the cached references are used, not run again.
	for _, en := range ents {
		if err := os.WriteFile(filepath.Join(exp, "reference", en.Name(), "sentinel"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Sweep(e, Options{Out: dir, Duration: 6 * sim.Second})
	if err != nil || res.Ran != 0 {
		t.Fatalf("again: %+v %v", res, err)
	}
	for _, en := range ents {
		if _, err := os.Stat(filepath.Join(exp, "reference", en.Name(), "sentinel")); err != nil {
			t.Errorf("reference %s was run again", en.Name())
		}
	}
	// Another duration is another reference.
	if _, err := Sweep(e, Options{Out: dir, Duration: 7 * sim.Second}); err != nil {
		t.Fatal(err)
	}
	ents2, _ := os.ReadDir(filepath.Join(exp, "reference"))
	if len(ents2) != 4 {
		t.Errorf("%d reference directories after a sweep of another duration, want 4", len(ents2))
	}
}

// readCSVFile reads a whole CSV file the test trusts.
func readCSVFile(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csv.NewReader(f).ReadAll()
}
