package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"skyloop/internal/hostile"
	"skyloop/record"
	"skyloop/sim"
)

// A shard of the small experiment (1 seed of 1 s, one shard of one), run
// once for every test here and copied for each.
var (
	shardOnce sync.Once
	shardTree string
	shardErr  error
)

// shardFixture copies a finished shard's --out directory to a fresh one:
// <dir>/small/shard-0-of-1.json, the reference and the two runs.
func shardFixture(t *testing.T) string {
	t.Helper()
	shardOnce.Do(func() {
		shardTree, shardErr = os.MkdirTemp("", "skyloop-merge-fixture-")
		if shardErr != nil {
			return
		}
		e, err := ParseExperiment("small.yaml", []byte(smallYAML), builtin, nil)
		if err != nil {
			shardErr = err
			return
		}
		_, shardErr = Sweep(e, Options{Out: shardTree, Seeds: 1, Duration: sim.Second, Workers: 2, Shard: Shard{0, 1}})
	})
	if shardErr != nil {
		t.Fatal(shardErr)
	}
	dst := filepath.Join(t.TempDir(), "shards")
	copyTree(t, shardTree, dst)
	return dst
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shardTree != "" {
		os.RemoveAll(shardTree)
	}
	os.Exit(code)
}

// copyTree copies the directories and regular files of src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editManifest rewrites the fixture's manifest (as generic JSON) with f,
// into the experiment directory exp (the same one, or another).
func editManifest(t *testing.T, shards, exp string, f func(m map[string]any)) string {
	t.Helper()
	src := filepath.Join(shards, "small", "shard-0-of-1.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ = json.MarshalIndent(m, "", "  ")
	os.Remove(src)
	dst := filepath.Join(shards, exp, "shard-0-of-1.json")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func planOf(m map[string]any) map[string]any { return m["plan"].(map[string]any) }

func variantsOf(m map[string]any) []any { return planOf(m)["variants"].([]any) }

// victimDir makes a directory of the user's with a file the merge must
// leave alone, and returns a check of both.
func victimDir(t *testing.T, dir string) func() {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "summary.csv")
	if err := os.WriteFile(f, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if b, err := os.ReadFile(f); err != nil || string(b) != "precious" {
			t.Errorf("the user's %s was overwritten: %q %v", f, b, err)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("the merge wrote into %s: %v", dir, names)
		}
	}
}

// manifestError checks that err is a ManifestError naming the file and
// the field.
func manifestError(t *testing.T, err error, file, field string) {
	t.Helper()
	var me *ManifestError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), field) {
		t.Errorf("%v, want a ManifestError naming %s and %s", err, file, field)
	}
}

// TestMergeExperimentNameStaysInOut: a manifest whose plan.experiment is
// a path (../victim, an absolute path, a/b) is refused naming the file and
// the field, and nothing is written outside --out (nor in it).
func TestMergeExperimentNameStaysInOut(t *testing.T) {
	for _, name := range []string{"../victim", "..", "/tmp/victim-abs", "a/b", ""} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			shards := shardFixture(t)
			base := filepath.Dir(shards)
			check := victimDir(t, filepath.Join(base, "victim"))
			file := editManifest(t, shards, "small", func(m map[string]any) { planOf(m)["experiment"] = name })
			out := filepath.Join(base, "out")
			_, err := Merge([]string{shards}, MergeOptions{Out: out})
			manifestError(t, err, file, "plan.experiment")
			check()
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("a refused merge wrote into --out")
			}
		})
	}
}

// TestMergeVariantNameStaysInOut: a variant named ../../victim (whose
// run a hostile shard directory placed where that name leads) is refused,
// and no run is placed outside --out.
func TestMergeVariantNameStaysInOut(t *testing.T) {
	shards := shardFixture(t)
	base := filepath.Dir(shards)
	check := victimDir(t, filepath.Join(base, "victim"))
	// The shard's experiment directory two levels down, so that the
	// variant's runs are inside the shard's tree.
	exp := filepath.Join(shards, "x", "y", "small")
	os.MkdirAll(filepath.Dir(exp), 0o755)
	if err := os.Rename(filepath.Join(shards, "small"), exp); err != nil {
		t.Fatal(err)
	}
	var old string
	file := filepath.Join(exp, "shard-0-of-1.json")
	b, _ := os.ReadFile(file)
	var m map[string]any
	json.Unmarshal(b, &m)
	v := variantsOf(m)[0].(map[string]any)
	old = v["name"].(string)
	v["name"] = "../../victim"
	for _, r := range m["runs"].([]any) {
		if r := r.(map[string]any); r["variant"] == old {
			r["variant"] = "../../victim"
		}
	}
	b, _ = json.Marshal(m)
	os.WriteFile(file, b, 0o644)
	copyTree(t, filepath.Join(exp, old), filepath.Join(exp, "..", "..", "victim"))
	out := filepath.Join(base, "out")
	_, err := Merge([]string{exp}, MergeOptions{Out: out})
	manifestError(t, err, file, "plan.variants[0].name")
	check()
	if _, err := os.Stat(filepath.Join(base, "victim", "seed1")); err == nil {
		t.Errorf("a run was placed outside --out")
	}
}

// TestMergeBoundsPlans: a plan beyond a sweep's limits (seeds, variants,
// runs listed) is refused before anything is allocated for it, naming the
// file and the field.
func TestMergeBoundsPlans(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(m map[string]any)
	}{
		{"plan.seeds", func(m map[string]any) { planOf(m)["seeds"] = 2_000_000 }},
		{"plan.seeds", func(m map[string]any) { planOf(m)["seeds"] = 400_000_000 }},
		{"plan.seeds", func(m map[string]any) { planOf(m)["seeds"] = -1 }},
		{"plan.variants", func(m map[string]any) {
			vs := variantsOf(m)
			v := vs[0].(map[string]any)
			for i := 0; i < MaxVariants; i++ {
				w := map[string]any{}
				for k, x := range v {
					w[k] = x
				}
				w["name"] = fmt.Sprintf("v%d", i)
				vs = append(vs, w)
			}
			planOf(m)["variants"] = vs
		}},
		{"runs", func(m map[string]any) {
			rs := m["runs"].([]any)
			for len(rs) < 10_000 {
				rs = append(rs, rs[0])
			}
			m["runs"] = rs
		}},
	} {
		t.Run(c.field, func(t *testing.T) {
			shards := shardFixture(t)
			file := editManifest(t, shards, "small", c.edit)
			var err error
			alloc := hostile.Allocated(func() {
				_, err = Merge([]string{shards}, MergeOptions{Out: filepath.Join(filepath.Dir(shards), "out")})
			})
			manifestError(t, err, file, c.field)
			if alloc > hostile.MaxAlloc {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			t.Logf("allocated %d KiB", alloc>>10)
		})
	}
}

// TestMergeWritesThroughNoLink: links already under --out (the
// experiment's directory, its figures, a run's directory, the lock file)
// or in a shard directory merged in place are not followed: the merge
// refuses, and the files they point to stay as they were.
func TestMergeWritesThroughNoLink(t *testing.T) {
	for _, c := range []struct {
		name  string
		link  func(out, exp, victim string) (string, string) // link name, target
		place bool                                           // merge in place (no --out)
	}{
		{"experiment", func(out, exp, victim string) (string, string) { return filepath.Join(out, "small"), victim }, false},
		{"figures", func(out, exp, victim string) (string, string) { return filepath.Join(out, "small", "figures"), victim }, false},
		{"run", func(out, exp, victim string) (string, string) {
			return filepath.Join(out, "small", "latency=1ms"), victim
		}, false},
		{"lock", func(out, exp, victim string) (string, string) {
			return filepath.Join(out, ".small.lock"), filepath.Join(victim, "summary.csv")
		}, false},
		{"in-place-figures", func(out, exp, victim string) (string, string) { return filepath.Join(exp, "figures"), victim }, true},
		{"in-place-summary-tmp", func(out, exp, victim string) (string, string) {
			return filepath.Join(exp, ".summary.csv.tmp"), filepath.Join(victim, "summary.csv")
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			shards := shardFixture(t)
			base := filepath.Dir(shards)
			victim := filepath.Join(base, "victim")
			check := victimDir(t, victim)
			out := filepath.Join(base, "out")
			link, target := c.link(out, filepath.Join(shards, "small"), victim)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			opt := MergeOptions{Out: out}
			if c.place {
				opt = MergeOptions{}
			}
			if _, err := Merge([]string{shards}, opt); err == nil {
				t.Errorf("merged through the link %s", link)
			}
			check()
		})
	}
}

// TestMergeCopiesNoLinkFromARun: a shard's run holding a link (one at
// the temporary name a report writer once used, beside a missing
// report.html; or its marker file) is not copied: the merge refuses,
// naming it, and the file the link points to stays as it was.
func TestMergeCopiesNoLinkFromARun(t *testing.T) {
	for _, name := range []string{"report.html.tmp", record.Marker} {
		t.Run(name, func(t *testing.T) {
			shards := shardFixture(t)
			base := filepath.Dir(shards)
			check := victimDir(t, filepath.Join(base, "victim"))
			run := filepath.Join(shards, "small", "latency=1ms", "seed1")
			os.Remove(filepath.Join(run, "report.html"))
			link := filepath.Join(run, name)
			os.Remove(link)
			if err := os.Symlink(filepath.Join(base, "victim", "summary.csv"), link); err != nil {
				t.Fatal(err)
			}
			_, err := Merge([]string{shards}, MergeOptions{Out: filepath.Join(base, "out")})
			if err == nil || !strings.Contains(err.Error(), link) {
				t.Errorf("merge of a run with a link: %v", err)
			}
			check()
		})
	}
}

// TestMergeManifestsMustAgree: a manifest that lists runs its plan does
// not give its shard (another key, a run twice, one missing) or that is
// not in its experiment's directory is refused, naming the file and the
// field; nothing is merged.
func TestMergeManifestsMustAgree(t *testing.T) {
	for _, c := range []struct {
		name, field, exp string
		edit             func(m map[string]any)
	}{
		{"key", "runs[0]", "small", func(m map[string]any) {
			m["runs"].([]any)[0].(map[string]any)["key"] = "0123456789abcdef"
		}},
		{"twice", "runs[1]", "small", func(m map[string]any) {
			rs := m["runs"].([]any)
			rs[1] = rs[0]
		}},
		{"missing", "runs", "small", func(m map[string]any) { m["runs"] = m["runs"].([]any)[1:] }},
		{"reference", "references", "small", func(m map[string]any) { m["references"] = []any{} }},
		{"directory", "plan.experiment", "other", func(m map[string]any) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shards := shardFixture(t)
			if c.exp != "small" {
				copyTree(t, filepath.Join(shards, "small"), filepath.Join(shards, c.exp))
			}
			file := editManifest(t, shards, c.exp, c.edit)
			out := filepath.Join(filepath.Dir(shards), "out")
			_, err := Merge([]string{shards}, MergeOptions{Out: out})
			manifestError(t, err, file, c.field)
			if _, err := os.Stat(filepath.Join(out, "small", "summary.csv")); err == nil {
				t.Errorf("merged despite the manifest")
			}
		})
	}
	// The fixture itself merges.
	shards := shardFixture(t)
	if _, err := Merge([]string{shards}, MergeOptions{Out: filepath.Join(filepath.Dir(shards), "out")}); err != nil {
		t.Fatal(err)
	}
}

// TestMergeReadsManifestsBounded: a manifest that is a device, a link out
// of its directory or larger than untrusted.MaxJSON is refused at a
// bounded cost, naming it.
func TestMergeReadsManifestsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"device", func(t *testing.T, p string) { os.Remove(p); os.Symlink("/dev/zero", p) }},
		{"sparse", func(t *testing.T, p string) {
			if err := os.Truncate(p, 100<<20); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shards := shardFixture(t)
			file := filepath.Join(shards, "small", "shard-0-of-1.json")
			c.make(t, file)
			var err error
			alloc := hostile.Allocated(func() {
				_, err = Merge([]string{shards}, MergeOptions{Out: filepath.Join(filepath.Dir(shards), "out")})
			})
			manifestError(t, err, file, "")
			if alloc > hostile.MaxAlloc {
				t.Errorf("allocated %d MB", alloc>>20)
			}
		})
	}
}

// TestRunKeysAreRunKey: runKeys gives runKey's keys.
func TestRunKeysAreRunKey(t *testing.T) {
	eff := []byte(`{"a": 1}`)
	for _, nf := range []bool{false, true} {
		for s, k := range runKeys(eff, 20, nf) {
			if want := runKey(eff, s+1, nf); k != want {
				t.Fatalf("seed %d: %s, want %s", s+1, k, want)
			}
		}
	}
}
