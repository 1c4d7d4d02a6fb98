package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"skyloop/sim"
)

func TestParseShard(t *testing.T) {
	for _, ok := range []struct {
		in   string
		k, n int
	}{{"0/1", 0, 1}, {"3/4", 3, 4}, {" 2/ 8", 2, 8}} {
		s, err := ParseShard(ok.in)
		if err != nil || s.Index != ok.k || s.Count != ok.n || !s.Sharded() {
			t.Errorf("ParseShard(%q) = %+v, %v; want %d/%d", ok.in, s, err, ok.k, ok.n)
		}
	}
	for _, bad := range []struct{ in, msg string }{
		{"4/4", "K must be 0..3"},
		{"-1/4", "K must be 0..3"},
		{"0/0", "at least 1"},
		{"1/-2", "at least 1"},
		{"a/b", "whole numbers"},
		{"1", "want K/N"},
		{"", "want K/N"},
		{"1/2/3", "whole numbers"},
		{"0/2000000", "at most"},
	} {
		_, err := ParseShard(bad.in)
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("ParseShard(%q): %v, want an error saying %q", bad.in, err, bad.msg)
		}
	}
	e := mustParse(t, "small.yaml", smallYAML)
	var oe *OptionError
	if _, err := Sweep(e, Options{Out: t.TempDir(), Shard: Shard{5, 3}}); !errors.As(err, &oe) {
		t.Errorf("Sweep with shard 5/3: %v, want an OptionError", err)
	}
}

// TestShardOfIsFNV1a pins the shard assignment to FNV-1a 64 (its published
// test vectors), which is the same on every machine and Go version, and
// checks that every run has exactly one shard and that many runs spread
// evenly.
func TestShardOfIsFNV1a(t *testing.T) {
	// FNV-1a 64 of "" is the offset basis, of "a" 0xaf63dc4c8601ec8c.
	for _, v := range []struct {
		s string
		h uint64
	}{{"", 0xcbf29ce484222325}, {"a", 0xaf63dc4c8601ec8c}, {"foobar", 0x85944171f73967e8}} {
		for _, n := range []uint64{1, 4, 7, 1000} {
			if got := shardOf(v.s, int(n)); got != int(v.h%n) {
				t.Errorf("shardOf(%q, %d) = %d, want %d", v.s, n, got, v.h%n)
			}
		}
	}
	const n = 4
	count := make([]int, n)
	for v := 0; v < 100; v++ {
		for s := 1; s <= 100; s++ {
			k := runShardKey("exp", fmt.Sprintf("x=%d", v), s)
			owners := 0
			for i := 0; i < n; i++ {
				if (Shard{i, n}).owns(k) {
					owners++
					count[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("%q is in %d shards of %d", k, owners, n)
			}
		}
	}
	for i, c := range count {
		if c < 2300 || c > 2700 {
			t.Errorf("shard %d of %d has %d of 10000 runs", i, n, c)
		}
	}
}

// sweepLevel lists the files of an experiment directory that are not in a
// run (summary.csv, meta.json, figures, report.html, ...).
func sweepLevel(files map[string][]byte) []string {
	var out []string
	for f := range files {
		if strings.HasPrefix(f, "reference/") || strings.Contains(f, "/seed") {
			continue
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// withoutManifests drops the shards' manifests from a tree.
func withoutManifests(files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for f, b := range files {
		if !manifestName.MatchString(f) {
			out[f] = b
		}
	}
	return out
}

// runShards runs the n shards of e at once in this process, shard k into
// out(k).
func runShards(t *testing.T, e *Experiment, n int, out func(k int) string) []*Result {
	t.Helper()
	res := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[k], errs[k] = Sweep(e, Options{Out: out(k), Workers: 1, Shard: Shard{k, n}})
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v", k, n, err)
		}
	}
	return res
}

// TestShardsMergeToTheSweep runs an experiment whole, then in 4 shards at
// once into one shared directory and into 4 directories: each merge gives
// the whole sweep's files byte for byte, runs and sweep-level files alike,
// and the shards ran every run and reference once.
func TestShardsMergeToTheSweep(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	whole := t.TempDir()
	if _, err := Sweep(e, Options{Out: whole}); err != nil {
		t.Fatal(err)
	}
	want := tree(t, filepath.Join(whole, "small"))
	if lv := sweepLevel(want); !slices.Contains(lv, "summary.csv") || !slices.Contains(lv, "meta.json") || !slices.Contains(lv, "figures/gap_error.png") {
		t.Fatalf("the whole sweep wrote %v: the comparison does not cover summary.csv, meta.json and the figures", lv)
	}

	t.Run("shared", func(t *testing.T) {
		dir := t.TempDir()
		res := runShards(t, e, 4, func(int) string { return dir })
		runs, refs := 0, 0
		for k, r := range res {
			runs += r.Runs
			refs += r.References
			if r.Rows != 0 || r.Ran != r.Runs {
				t.Errorf("shard %d: %+v", k, r)
			}
		}
		if runs != 6 || refs != 1 {
			t.Fatalf("the shards have %d runs and %d references, want 6 and 1", runs, refs)
		}
		got := tree(t, filepath.Join(dir, "small"))
		if lv := sweepLevel(got); len(lv) != 4 {
			t.Fatalf("the shards wrote sweep-level files %v, want their 4 manifests only", lv)
		}
		mr, err := Merge([]string{dir}, MergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(mr) != 1 || mr[0].Placed != 0 || mr[0].Rows != 6 || mr[0].Runs != 6 || mr[0].References != 1 || mr[0].Dir != filepath.Join(dir, "small") {
			t.Fatalf("merge in place: %+v", mr[0])
		}
		sameTree(t, "merged in place vs whole", withoutManifests(tree(t, filepath.Join(dir, "small"))), want)
		// Merging again changes nothing.
		if _, err := Merge([]string{filepath.Join(dir, "small")}, MergeOptions{}); err != nil {
			t.Fatal(err)
		}
		sameTree(t, "merged twice vs whole", withoutManifests(tree(t, filepath.Join(dir, "small"))), want)
	})

	t.Run("separate", func(t *testing.T) {
		base := t.TempDir()
		dirs := make([]string, 4)
		for k := range dirs {
			dirs[k] = filepath.Join(base, fmt.Sprintf("shard%d", k))
		}
		runShards(t, e, 4, func(k int) string { return dirs[k] })
		out := filepath.Join(base, "merged")
		mr, err := Merge(dirs, MergeOptions{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if len(mr) != 1 || mr[0].Placed != 7 || mr[0].Rows != 6 {
			t.Fatalf("merge: %+v", mr[0])
		}
		sameTree(t, "merged vs whole", tree(t, filepath.Join(out, "small")), want)
		// Without --out the shards have no one place to go.
		var oe *OptionError
		if _, err := Merge(dirs, MergeOptions{}); !errors.As(err, &oe) || !strings.Contains(err.Error(), "give --out") {
			t.Errorf("merge of 4 directories in place: %v", err)
		}
		// The shards are untouched: merging is repeatable, and finds the
		// runs in place the second time.
		mr, err = Merge(dirs, MergeOptions{Out: out})
		if err != nil || mr[0].Placed != 0 {
			t.Fatalf("second merge: %+v %v", mr, err)
		}
		sameTree(t, "merged twice vs whole", tree(t, filepath.Join(out, "small")), want)
	})
}

// TestMergeNamesMissingRuns: merging without a shard, or with a shard that
// was stopped, names every missing run, its key and its shard, and writes
// nothing; once the shard has finished, the merge equals the whole sweep.
func TestMergeNamesMissingRuns(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	whole := t.TempDir()
	if _, err := Sweep(e, Options{Out: whole}); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	// Shard 1 of 2 is stopped after its first run; shard 0 finishes.
	var done atomic.Int32
	res, err := Sweep(e, Options{Out: dirs[1], Workers: 1, Shard: Shard{1, 2}, Command: []string{"skyloop", "sweep", "small.yaml", "--shard", "1/2"},
		Progress: func(Progress) { done.Add(1) }, Stop: func() bool { return done.Load() >= 1 }})
	if !errors.Is(err, sim.ErrStopped) || res.Runs < 2 {
		t.Fatalf("shard 1/2: %+v %v, want it stopped with runs left", res, err)
	}
	if _, err := Sweep(e, Options{Out: dirs[0], Shard: Shard{0, 2}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "merged")

	// Shard 1's directory not given.
	_, err = Merge(dirs[:1], MergeOptions{Out: out})
	var ie *IncompleteError
	if !errors.As(err, &ie) {
		t.Fatalf("merge without shard 1: %v, want an IncompleteError", err)
	}
	m, _ := readManifest(filepath.Join(dirs[1], "small", "shard-1-of-2.json"))
	if m == nil || m.State != stateStopped {
		t.Fatalf("the stopped shard's manifest: %+v", m)
	}
	var wantNames []string
	for _, r := range m.Runs {
		wantNames = append(wantNames, fmt.Sprintf("%s seed %d", r.Variant, r.Seed))
	}
	for _, k := range m.References {
		wantNames = append(wantNames, "reference/"+k)
	}
	var names []string
	for _, mr := range ie.Missing {
		names = append(names, mr.Name)
		if mr.Shard != (Shard{1, 2}) || !strings.Contains(mr.Why, "no shard-1-of-2.json") {
			t.Errorf("missing %s: %+v", mr.Name, mr)
		}
		if !strings.Contains(err.Error(), mr.Key) || !strings.Contains(err.Error(), mr.Name) {
			t.Errorf("the error does not name %s (key %s):\n%v", mr.Name, mr.Key, err)
		}
	}
	slices.Sort(names)
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) || ie.Total != 7 {
		t.Errorf("missing %v of %d, want shard 1's %v of 7", names, ie.Total, wantNames)
	}
	if _, err := os.Stat(out); err == nil {
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Errorf("an incomplete merge wrote into %s", out)
		}
	}

	// Shard 1's directory given: the runs it did not finish are missing,
	// and it says it was stopped and how to run it again.
	_, err = Merge(dirs, MergeOptions{Out: out})
	// (its references ran first, then one run)
	if !errors.As(err, &ie) || len(ie.Missing) != len(m.Runs)-1 {
		t.Fatalf("merge with the stopped shard: %v, want %d missing", err, len(m.Runs)-1)
	}
	if !strings.Contains(err.Error(), "shard 1/2: it was stopped before it finished; run it (again) with: skyloop sweep small.yaml --shard 1/2") {
		t.Errorf("the error does not say what happened to shard 1/2:\n%v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "small", "summary.csv")); err == nil {
		t.Errorf("an incomplete merge wrote summary.csv")
	}

	// Shard 1 finished: the merge is the whole sweep.
	res, err = Sweep(e, Options{Out: dirs[1], Shard: Shard{1, 2}})
	if err != nil || res.Skipped != 1 || res.Ran != res.Runs-1 {
		t.Fatalf("shard 1/2 again: %+v %v", res, err)
	}
	if _, err := Merge(dirs, MergeOptions{Out: out}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "merged vs whole", tree(t, filepath.Join(out, "small")), tree(t, filepath.Join(whole, "small")))
}

// TestMergeDuplicates: a shard run twice into two directories is merged
// once; if the two copies of a run differ, the merge names the run and the
// file and writes nothing.
func TestMergeDuplicates(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "b2")}
	for i, k := range []int{0, 1, 1} {
		if _, err := Sweep(e, Options{Out: dirs[i], Shard: Shard{k, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(base, "merged")
	mr, err := Merge(dirs, MergeOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if mr[0].Placed != 7 || mr[0].Rows != 6 {
		t.Fatalf("merge: %+v", mr[0])
	}
	sum, _ := os.ReadFile(filepath.Join(out, "small", "summary.csv"))

	m, _ := readManifest(filepath.Join(dirs[1], "small", "shard-1-of-2.json"))
	r := m.Runs[0]
	run := filepath.Join(dirs[2], "small", r.Variant, fmt.Sprintf("seed%d", r.Seed))
	tr, _ := os.ReadFile(filepath.Join(run, "trace.csv"))
	if err := os.WriteFile(filepath.Join(run, "trace.csv"), append(tr, "tampered\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(base, "merged2")
	_, err = Merge(dirs, MergeOptions{Out: out2})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Run != fmt.Sprintf("%s seed %d", r.Variant, r.Seed) || !slices.Equal(ce.Files, []string{"trace.csv"}) {
		t.Fatalf("merge of differing copies: %v, want a conflict on %s seed %d trace.csv", err, r.Variant, r.Seed)
	}
	if _, err := os.Stat(filepath.Join(out2, "small", "summary.csv")); err == nil {
		t.Errorf("a conflicting merge wrote summary.csv")
	}
	// The first merge's copy is one more copy of the run, and the same as
	// the untouched shard's: merging a and b into it still works.
	if _, err := Merge(dirs[:2], MergeOptions{Out: out}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "small", "summary.csv")); string(got) != string(sum) {
		t.Errorf("summary.csv changed on the second merge")
	}
}

// TestMergeRefusesMixedShards: shards run with other options (seeds) or
// another N are not merged together.
func TestMergeRefusesMixedShards(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	base := t.TempDir()
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	for _, s := range []struct {
		dir   string
		seeds int
		shard Shard
	}{{a, 2, Shard{0, 2}}, {b, 3, Shard{1, 2}}, {c, 2, Shard{1, 3}}} {
		if _, err := Sweep(e, Options{Out: s.dir, Seeds: s.seeds, Shard: s.shard, Duration: sim.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Merge([]string{a, b}, MergeOptions{Out: filepath.Join(base, "m")}); err == nil || !strings.Contains(err.Error(), "different experiment files or options") {
		t.Errorf("merge of shards with 2 and 3 seeds: %v", err)
	}
	if _, err := Merge([]string{a, c}, MergeOptions{Out: filepath.Join(base, "m")}); err == nil || !strings.Contains(err.Error(), "merge the shards of one split") {
		t.Errorf("merge of shards of 2 and of 3: %v", err)
	}
	var oe *OptionError
	if _, err := Merge([]string{filepath.Join(base, "none")}, MergeOptions{}); !errors.As(err, &oe) {
		t.Errorf("merge of a missing directory: %v", err)
	}
	if _, err := Merge([]string{base}, MergeOptions{}); !errors.As(err, &oe) || !strings.Contains(err.Error(), "no shard manifest") {
		t.Errorf("merge of a directory without manifests: %v", err)
	}
}

// TestHalfWrittenRunsAreRedone leaves a shard as a kill would: one run
// half-written (its temporary directory, no summary, a stale lock file)
// and one finished just before its report.html was written. Merge names
// the half-written run only; the shard run again redoes it, writes the
// missing report, leaves no temporary, and the merge equals the whole
// sweep.
func TestHalfWrittenRunsAreRedone(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	whole := t.TempDir()
	if _, err := Sweep(e, Options{Out: whole}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runShards(t, e, 2, func(int) string { return dir })
	exp := filepath.Join(dir, "small")
	var m *manifest
	for k := 0; k < 2 && (m == nil || len(m.Runs) < 2); k++ {
		m, _ = readManifest(filepath.Join(exp, fmt.Sprintf("shard-%d-of-2.json", k)))
	}
	if m == nil || len(m.Runs) < 2 {
		t.Fatalf("no shard has 2 runs: %+v", m)
	}
	run := func(i int) string {
		return filepath.Join(exp, m.Runs[i].Variant, fmt.Sprintf("seed%d", m.Runs[i].Seed))
	}
	// Run 0 finished, but its report was being written.
	if err := os.Rename(filepath.Join(run(0), "report.html"), filepath.Join(run(0), ".report.html.tmp")); err != nil {
		t.Fatal(err)
	}
	// Run 1 was being written.
	half := filepath.Join(filepath.Dir(run(1)), "."+filepath.Base(run(1))+".tmp-123456")
	if err := os.Rename(run(1), half); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(half, "summary.json"))
	os.Remove(filepath.Join(half, "meta.json"))
	os.WriteFile(filepath.Join(filepath.Dir(run(1)), "."+filepath.Base(run(1))+".lock"), []byte("999999\n"), 0o644)

	_, err := Merge([]string{dir}, MergeOptions{})
	var ie *IncompleteError
	name := fmt.Sprintf("%s seed %d", m.Runs[1].Variant, m.Runs[1].Seed)
	if !errors.As(err, &ie) || len(ie.Missing) != 1 || ie.Missing[0].Name != name {
		t.Fatalf("merge with a half-written run: %v, want %s missing", err, name)
	}
	res, err := Sweep(e, Options{Out: dir, Shard: Shard{m.Shard, m.Shards}})
	if err != nil || res.Ran != 1 || res.Skipped != res.Runs-1 {
		t.Fatalf("the shard again: %+v %v, want 1 run redone", res, err)
	}
	if _, err := Merge([]string{dir}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	got := tree(t, exp)
	for f := range got {
		if strings.Contains(f, ".tmp") || strings.HasSuffix(f, ".lock") {
			t.Errorf("left behind: %s", f)
		}
	}
	sameTree(t, "redone and merged vs whole", withoutManifests(got), tree(t, filepath.Join(whole, "small")))
}

// TestMergeCopiesWithoutLinks: where hard links cannot be made (another
// file system), merge copies the runs, with the same result.
func TestMergeCopiesWithoutLinks(t *testing.T) {
	e := mustParse(t, "small.yaml", smallYAML)
	whole := t.TempDir()
	if _, err := Sweep(e, Options{Out: whole}); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	runShards(t, e, 2, func(k int) string { return dirs[k] })
	defer func(l func(string, string) error) { link = l }(link)
	var tried atomic.Int32
	link = func(string, string) error { tried.Add(1); return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
	out := filepath.Join(base, "merged")
	if _, err := Merge(dirs, MergeOptions{Out: out}); err != nil {
		t.Fatal(err)
	}
	if tried.Load() == 0 {
		t.Fatalf("merge never tried to link")
	}
	got := filepath.Join(out, "small", "latency=1ms", "seed1", "trace.csv")
	st, err := os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("%s has %d links: not a copy", got, n)
	}
	sameTree(t, "copied vs whole", tree(t, filepath.Join(out, "small")), tree(t, filepath.Join(whole, "small")))
}
