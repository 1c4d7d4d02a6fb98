package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"skyloop/internal/short"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shardExperiment is a small sweep with a reference run shared by its
// variants: 3 x seeds runs.
const shardExperiment = `experiment: shardy
scenario: netbots/platoon
seeds: SEEDS
base: {duration: DURATION}
sweep: {param: network.loss, values: [0, 0.2, 0.4]}
reference:
  network: {backend: ideal, epoch: 10ms}
  vehicles[robot].behaviors[beacon].period: 2ms
`

func writeShardExperiment(t *testing.T, seeds int, duration string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shardy.yaml")
	text := strings.NewReplacer("SEEDS", fmt.Sprint(seeds), "DURATION", duration).Replace(shardExperiment)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withoutShardFiles drops the shards' manifests from a tree.
func withoutShardFiles(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !regexp.MustCompile(`^shard-\d+-of-\d+\.json$`).MatchString(k) {
			out[k] = v
		}
	}
	return out
}

// sameFiles reports the files that differ between two trees.
func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diff []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diff = append(diff, k+" (missing)")
		} else if g != v {
			diff = append(diff, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, k+" (extra)")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("%s: %d files differ: %v", what, len(diff), diff[:min(len(diff), 10)])
	}
}

// runShardProcesses starts n `skyloop sweep --shard k/n` processes at once,
// shard k writing into out(k), and waits for all.
func runShardProcesses(t *testing.T, exp string, n int, out func(k int) string) {
	t.Helper()
	var cs []*child
	for k := 0; k < n; k++ {
		cs = append(cs, startCLI(t, "sweep", exp, "--shard", fmt.Sprintf("%d/%d", k, n), "--out", out(k), "--workers", "1"))
	}
	for k, c := range cs {
		if code := c.wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("shard %d/%d: exit %d: %s", k, n, code, c.stderr.String())
		}
		// Off a terminal: log lines naming the shard, one per finished run.
		if !strings.Contains(c.stderr.String(), fmt.Sprintf(`msg="run finished" sweep="shardy [shard %d/%d]" runs=`, k, n)) {
			t.Errorf("shard %d/%d printed no progress of its own:\n%s", k, n, c.stderr.String())
		}
	}
}

// TestShardProcessesMergeToTheSweep runs 4 shard processes at once, into
// one shared directory and into 4 directories; skyloop sweep merge then
// gives the files of one unsharded sweep, byte for byte: summary.csv,
// meta.json, figures and every run.
func TestShardProcessesMergeToTheSweep(t *testing.T) {
	exp := writeShardExperiment(t, 4, "20s")
	whole := t.TempDir()
	if c := startCLI(t, "sweep", exp, "--out", whole, "-q"); c.wait(t, 2*time.Minute) != 0 {
		t.Fatalf("unsharded sweep: exit %d: %s", c.code, c.stderr.String())
	}
	want := tree(t, filepath.Join(whole, "shardy"))
	for _, f := range []string{"summary.csv", "meta.json", "figures/gap_error.png", "report.html"} {
		if _, ok := want[f]; !ok {
			t.Fatalf("the unsharded sweep wrote no %s: the comparison does not cover it", f)
		}
	}

	t.Run("shared", func(t *testing.T) {
		out := t.TempDir()
		runShardProcesses(t, exp, 4, func(int) string { return out })
		if _, err := os.Stat(filepath.Join(out, "shardy", "summary.csv")); err == nil {
			t.Fatalf("a shard wrote summary.csv")
		}
		c := startCLI(t, "sweep", "merge", out)
		if code := c.wait(t, time.Minute); code != 0 {
			t.Fatalf("merge: exit %d: %s", code, c.stderr.String())
		}
		if !strings.Contains(c.stdout.String(), "shardy: 12 runs and 1 references of 4 shards") {
			t.Errorf("merge said:\n%s", c.stdout.String())
		}
		got := tree(t, filepath.Join(out, "shardy"))
		if got["summary.csv"] != want["summary.csv"] {
			t.Errorf("summary.csv of the merged shards differs from the unsharded sweep's")
		}
		sameFiles(t, "merged in place vs unsharded", withoutShardFiles(got), want)
		if bad := leftovers(t, out); len(bad) > 0 {
			t.Errorf("left behind: %v", bad)
		}
	})

	t.Run("separate", func(t *testing.T) {
		base := t.TempDir()
		var dirs []string
		for k := 0; k < 4; k++ {
			dirs = append(dirs, filepath.Join(base, fmt.Sprint("shard", k)))
		}
		runShardProcesses(t, exp, 4, func(k int) string { return dirs[k] })
		merged := filepath.Join(base, "merged")
		c := startCLI(t, append(append([]string{"sweep", "merge"}, dirs...), "-o", merged)...)
		if code := c.wait(t, time.Minute); code != 0 {
			t.Fatalf("merge: exit %d: %s", code, c.stderr.String())
		}
		got := tree(t, filepath.Join(merged, "shardy"))
		if got["summary.csv"] != want["summary.csv"] {
			t.Errorf("summary.csv of the merged shards differs from the unsharded sweep's")
		}
		sameFiles(t, "merged vs unsharded", got, want)
	})
}

// TestKilledShardRerun kills a shard process (SIGKILL: no clean-up) after
// its first run: merge then names the runs it still owes and exits 1; the
// shard run again skips its finished runs, leaves nothing half-written,
// and the merge equals the unsharded sweep.
func TestKilledShardRerun(t *testing.T) {
	short.Skip(t, "takes several seconds")
	exp := writeShardExperiment(t, 6, "300s")
	whole, out := t.TempDir(), t.TempDir()
	if c := startCLI(t, "sweep", exp, "--out", whole, "-q"); c.wait(t, 3*time.Minute) != 0 {
		t.Fatalf("unsharded sweep: exit %d: %s", c.code, c.stderr.String())
	}
	c := startCLI(t, "sweep", exp, "--shard", "0/2", "--out", out, "--workers", "1")
	manifest := filepath.Join(out, "shardy", "shard-0-of-2.json")
	var m struct {
		State string `json:"state"`
		Runs  []struct {
			Variant string `json:"variant"`
			Seed    int    `json:"seed"`
			Key     string `json:"key"`
		} `json:"runs"`
	}
	readM := func() bool {
		b, err := os.ReadFile(manifest)
		return err == nil && json.Unmarshal(b, &m) == nil
	}
	runDir := func(i int) string {
		return filepath.Join(out, "shardy", m.Runs[i].Variant, fmt.Sprint("seed", m.Runs[i].Seed))
	}
	finished := func() int {
		n := 0
		for i := range m.Runs {
			if _, err := os.Stat(filepath.Join(runDir(i), "summary.json")); err == nil {
				n++
			}
		}
		return n
	}
	if !eventually(time.Minute, func() bool { return readM() && finished() > 0 }) {
		t.Fatalf("shard 0/2 finished no run; stderr:\n%s", c.stderr.String())
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.wait(t, time.Minute)
	done := finished()
	if done >= len(m.Runs) {
		t.Fatalf("shard 0/2 finished all %d runs before it was killed: nothing tested", len(m.Runs))
	}
	if !readM() || m.State != "running" {
		t.Errorf("the killed shard's manifest says %q, want running", m.State)
	}

	if c := startCLI(t, "sweep", exp, "--shard", "1/2", "--out", out, "-q"); c.wait(t, 3*time.Minute) != 0 {
		t.Fatalf("shard 1/2: exit %d: %s", c.code, c.stderr.String())
	}
	c = startCLI(t, "sweep", "merge", out)
	if code := c.wait(t, time.Minute); code != 1 {
		t.Fatalf("merge with a killed shard: exit %d, want 1; stderr:\n%s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	if !strings.Contains(msg, fmt.Sprintf("%d of 19 runs and references are missing", len(m.Runs)-done)) ||
		!strings.Contains(msg, "shard 0/2: its manifest says running: it is still going, or it was killed; run it (again) with: skyloop sweep "+exp+" --shard 0/2") {
		t.Errorf("merge does not say which runs are missing and why:\n%s", msg)
	}
	for i := range m.Runs {
		if _, err := os.Stat(filepath.Join(runDir(i), "summary.json")); err != nil && !strings.Contains(msg, fmt.Sprintf("%s seed %d (key %s)", m.Runs[i].Variant, m.Runs[i].Seed, m.Runs[i].Key)) {
			t.Errorf("merge does not name %s seed %d", m.Runs[i].Variant, m.Runs[i].Seed)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "shardy", "summary.csv")); err == nil {
		t.Errorf("the failed merge wrote summary.csv")
	}

	c = startCLI(t, "sweep", exp, "--shard", "0/2", "--out", out)
	if code := c.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("shard 0/2 again: exit %d: %s", code, c.stderr.String())
	}
	if !strings.Contains(c.stdout.String(), fmt.Sprintf("%d runs done, %d already finished", len(m.Runs)-done, done)) {
		t.Errorf("shard 0/2 again did not skip its %d finished runs:\n%s", done, c.stdout.String())
	}
	if !readM() || m.State != "done" {
		t.Errorf("the shard's manifest says %q after it finished, want done", m.State)
	}
	c = startCLI(t, "sweep", "merge", out)
	if code := c.wait(t, time.Minute); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, c.stderr.String())
	}
	if bad := leftovers(t, out); len(bad) > 0 {
		t.Errorf("left behind: %v", bad)
	}
	sameFiles(t, "killed, rerun and merged vs unsharded", withoutShardFiles(tree(t, filepath.Join(out, "shardy"))), tree(t, filepath.Join(whole, "shardy")))
}

// TestShardBadInput: bad --shard values and merges without shards exit 2
// with a message saying what is wrong, and write nothing.
func TestShardBadInput(t *testing.T) {
	exp := writeShardExperiment(t, 1, "1s")
	out := filepath.Join(t.TempDir(), "out")
	for _, bad := range []struct{ shard, msg string }{
		{"4/4", "K must be 0..3 for 4 shards"},
		{"-1/2", "K must be 0..1"},
		{"0/0", "N (the number of shards) must be at least 1"},
		{"1", "want K/N"},
		{"x/4", "whole numbers"},
	} {
		code, _, stderr := capture(t, "sweep", exp, "--out", out, "--shard", bad.shard)
		if code != exitBadInput || !strings.Contains(stderr, bad.msg) {
			t.Errorf("--shard %s: exit %d, stderr %q; want 2 and %q", bad.shard, code, stderr, bad.msg)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a bad --shard wrote %s", out)
	}
	for _, args := range []struct {
		args []string
		msg  string
	}{
		{[]string{"sweep", "merge"}, "merge needs the shards' directories"},
		{[]string{"sweep", "merge", filepath.Join(t.TempDir(), "nothing")}, "no such file"},
		{[]string{"sweep", "merge", t.TempDir()}, "no shard manifest (shard-K-of-N.json) here or one level down"},
	} {
		code, _, stderr := capture(t, args.args...)
		if code != exitBadInput || !strings.Contains(stderr, args.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args.args, code, stderr, args.msg)
		}
	}
	// Shards in two directories need --out.
	base := t.TempDir()
	for k := 0; k < 2; k++ {
		if code, _, stderr := capture(t, "sweep", exp, "-q", "--shard", fmt.Sprintf("%d/2", k), "--out", filepath.Join(base, fmt.Sprint(k))); code != 0 {
			t.Fatalf("shard %d/2: exit %d: %s", k, code, stderr)
		}
	}
	code, _, stderr := capture(t, "sweep", "merge", filepath.Join(base, "0"), filepath.Join(base, "1"))
	if code != exitBadInput || !strings.Contains(stderr, "give --out DIR") {
		t.Errorf("merge of two directories without --out: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := capture(t, "sweep", "merge", filepath.Join(base, "0"), filepath.Join(base, "1"), "-o", filepath.Join(base, "m"))
	if code != 0 || !strings.Contains(stdout, "shardy: 3 runs and 1 references of 2 shards") {
		t.Errorf("merge -o: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestMergeOfAHostileManifest: skyloop sweep merge of a shard whose
// manifest names its experiment ../victim, or has 400000000 seeds, exits 2
// naming the manifest and the field, and leaves the user's files alone.
func TestMergeOfAHostileManifest(t *testing.T) {
	exp := writeShardExperiment(t, 1, "1s")
	base := t.TempDir()
	shards := filepath.Join(base, "shards")
	if code, _, stderr := capture(t, "sweep", exp, "-q", "--shard", "0/1", "--out", shards); code != 0 {
		t.Fatalf("shard 0/1: exit %d: %s", code, stderr)
	}
	victim := filepath.Join(base, "victim")
	os.Mkdir(victim, 0o755)
	precious := filepath.Join(victim, "summary.csv")
	os.WriteFile(precious, []byte("precious"), 0o644)
	file := filepath.Join(shards, "shardy", "shard-0-of-1.json")
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ field, from, to string }{
		{"plan.experiment", `"experiment": "shardy"`, `"experiment": "../victim"`},
		{"plan.seeds", `"seeds": 1`, `"seeds": 400000000`},
	} {
		b := strings.Replace(string(orig), c.from, c.to, 1)
		if b == string(orig) {
			t.Fatalf("the manifest has no %s", c.from)
		}
		os.WriteFile(file, []byte(b), 0o644)
		code, _, stderr := capture(t, "sweep", "merge", shards, "-o", filepath.Join(base, "out"))
		if code != exitBadInput || !strings.Contains(stderr, file) || !strings.Contains(stderr, c.field) {
			t.Errorf("%s: exit %d: %s", c.to, code, stderr)
		}
		if b, _ := os.ReadFile(precious); string(b) != "precious" {
			t.Fatalf("%s: the user's file was overwritten", c.to)
		}
		if ents, _ := os.ReadDir(victim); len(ents) != 1 {
			t.Errorf("%s: the merge wrote into %s", c.to, victim)
		}
	}
}
