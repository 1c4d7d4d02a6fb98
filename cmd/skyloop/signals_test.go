package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree reads every file under dir: relative path -> content.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// leftovers lists temporary files and directories, lock files and partial
// run directories under dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var bad []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n := d.Name()
		if strings.Contains(n, ".tmp") || strings.HasSuffix(n, ".lock") || strings.HasSuffix(n, ".incomplete") {
			bad = append(bad, p)
		}
		return nil
	})
	return bad
}

const signalExperiment = `experiment: sig
scenario: netbots/platoon
seeds: 12
base: {duration: 20s}
sweep: {param: network.loss, values: [0, 0.2, 0.4]}
`

// TestSweepStopsCleanlyOnEverySignal: a sweep stopped by SIGINT, SIGTERM
// or SIGHUP exits 128+signal, keeps its finished runs and summary.csv,
// leaves no temporaries, and once resumed gives files identical to a
// sweep that was never interrupted.
func TestSweepStopsCleanlyOnEverySignal(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "sig.yaml")
	os.WriteFile(exp, []byte(signalExperiment), 0o644)
	refOut := t.TempDir()
	if c := startCLI(t, "sweep", exp, "--out", refOut, "--workers", "1", "-q"); c.wait(t, 2*time.Minute) != 0 {
		t.Fatalf("uninterrupted sweep: exit %d: %s", c.code, c.stderr.String())
	}
	want := tree(t, refOut)
	if len(want) < 36 {
		t.Fatalf("reference sweep wrote only %d files", len(want))
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			out := t.TempDir()
			c := startCLI(t, "sweep", exp, "--out", out, "--workers", "1", "-q")
			// Signal once the first run has finished.
			if !eventually(time.Minute, func() bool {
				_, err := os.Stat(filepath.Join(out, "sig", "loss=0", "seed1", "summary.json"))
				return err == nil
			}) {
				t.Fatalf("no run finished; stderr:\n%s", c.stderr.String())
			}
			c.cmd.Process.Signal(sig)
			code := c.wait(t, time.Minute)
			if code != 128+int(sig) {
				t.Fatalf("exit %d after %v, want %d; stderr:\n%s", code, sig, 128+int(sig), c.stderr.String())
			}
			if !strings.Contains(c.stderr.String(), "run the same command again to continue") {
				t.Errorf("stderr does not say how to continue:\n%s", c.stderr.String())
			}
			if _, err := os.Stat(filepath.Join(out, "sig", "summary.csv")); err != nil {
				t.Errorf("no summary.csv after the stop: %v", err)
			}
			if bad := leftovers(t, out); len(bad) > 0 {
				t.Errorf("left behind after %v: %v", sig, bad)
			}
			if len(tree(t, out)) >= len(want) {
				t.Fatalf("the sweep finished before the signal: nothing tested")
			}
			c = startCLI(t, "sweep", exp, "--out", out, "--workers", "1", "-q")
			if code := c.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("resumed sweep: exit %d: %s", code, c.stderr.String())
			}
			got := tree(t, out)
			var diff []string
			for k, v := range want {
				if got[k] != v {
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
				t.Errorf("resumed sweep differs from the uninterrupted one in %d files: %v", len(diff), diff[:min(len(diff), 10)])
			}
		})
	}
}

// TestRunStopsCleanlyOnEverySignal: a run stopped by a signal exits
// 128+signal, keeps its partial files in <out>.incomplete with the reason
// in ERROR.txt, and leaves no temporary directory or lock.
func TestRunStopsCleanlyOnEverySignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "r")
			c := startCLI(t, "run", "quickstart", "--duration", "2h", "--out", out)
			if !eventually(time.Minute, func() bool {
				m, _ := filepath.Glob(filepath.Join(dir, ".r.tmp-*", "trace.csv"))
				return len(m) > 0
			}) {
				t.Fatalf("the run did not start; stderr:\n%s", c.stderr.String())
			}
			c.cmd.Process.Signal(sig)
			if code := c.wait(t, time.Minute); code != 128+int(sig) {
				t.Fatalf("exit %d after %v, want %d; stderr:\n%s", code, sig, 128+int(sig), c.stderr.String())
			}
			msg, err := os.ReadFile(filepath.Join(out+".incomplete", "ERROR.txt"))
			if err != nil || !bytes.Contains(msg, []byte("interrupted")) {
				t.Errorf("ERROR.txt: %q, %v", msg, err)
			}
			if !strings.Contains(c.stderr.String(), out+".incomplete") || strings.Contains(c.stderr.String(), ".tmp-") {
				t.Errorf("stderr should name %s.incomplete and no temporary path:\n%s", out, c.stderr.String())
			}
			ents, _ := os.ReadDir(dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) != 1 || names[0] != "r.incomplete" {
				t.Errorf("left in the output's parent: %v", names)
			}
		})
	}
}
