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

	"skyloop/foxglove"
	"skyloop/internal/nodetest"
	"skyloop/internal/short"
	"skyloop/scenarios"
	"skyloop/tables"
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
	short.Skip(t, "takes several seconds")
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

// TestInterruptedRunKeepsReadableMCAPAndParquet: SIGINT to a real skyloop
// process in the middle of a run with outputs {format: parquet, mcap:
// true} leaves, like the CSV files of such a run, readable partial files
// in <out>.incomplete with every row written up to the stop: hyparquet
// reads trace, deliveries and vehicles.parquet (footers and all) and
// @mcap/core reads run.mcap with its stream reader and through its index
// and summary; the tables have the rows run.mcap has messages for. While
// the run goes, Parquet row groups already reach the disk.
func TestInterruptedRunKeepsReadableMCAPAndParquet(t *testing.T) {
	node, nodeDir := nodetest.Readers(t, "hyparquet", "@mcap/core")
	base, ok := scenarios.Lookup("quickstart")
	if !ok {
		t.Fatal("no quickstart scenario")
	}
	text := strings.Replace(string(base), "duration: 60s\n", "duration: 2h\noutputs: {format: parquet, mcap: true}\n", 1)
	if text == string(base) {
		t.Fatal("quickstart changed; update this test")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r")
	c := startCLI(t, "run", file, "--out", out, "--workers", "1")
	// Wait for progress measured in data, not time: 32 MiB of run.mcap on
	// disk is some 100,000 network events, more than a Parquet row group
	// (tables.GroupRows) of trace rows.
	size := func(name string) int64 {
		m, _ := filepath.Glob(filepath.Join(dir, ".r.tmp-*", name))
		if len(m) != 1 {
			return -1
		}
		st, err := os.Stat(m[0])
		if err != nil {
			return -1
		}
		return st.Size()
	}
	if !eventually(3*time.Minute, func() bool { return size("run.mcap") >= 32<<20 }) {
		t.Fatalf("the run did not write 32 MiB of run.mcap; stderr:\n%s", c.stderr.String())
	}
	onDisk := size("trace.parquet")
	c.cmd.Process.Signal(syscall.SIGINT)
	if code := c.wait(t, 2*time.Minute); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit %d after SIGINT, want %d; stderr:\n%s", code, 128+int(syscall.SIGINT), c.stderr.String())
	}
	if onDisk <= 0 {
		t.Errorf("trace.parquet had %d bytes on disk after 32 MiB of run.mcap: Parquet rows are not written as the run goes", onDisk)
	}
	kept := out + ".incomplete"
	if msg, err := os.ReadFile(filepath.Join(kept, "ERROR.txt")); err != nil || !bytes.Contains(msg, []byte("interrupted")) {
		t.Errorf("ERROR.txt: %q, %v", msg, err)
	}

	var m struct {
		Footer       bool           `json:"footer"`
		Counts       map[string]int `json:"counts"`
		IndexedError string         `json:"indexedError"`
		Indexed      struct {
			Counts     map[string]int `json:"counts"`
			Statistics int            `json:"statistics"`
		} `json:"indexed"`
	}
	mcapOK := false
	if err := nodetest.JSON(node, nodeDir, "read.mjs", &m, filepath.Join(kept, "run.mcap")); err != nil {
		t.Errorf("@mcap/core cannot read the partial run.mcap: %v", err)
	} else if !m.Footer || m.IndexedError != "" {
		t.Errorf("the partial run.mcap: footer %v; @mcap/core's indexed reader: %s", m.Footer, m.IndexedError)
	} else {
		mcapOK = true
		total := 0
		for topic, n := range m.Counts {
			total += n
			if m.Indexed.Counts[topic] != n {
				t.Errorf("run.mcap: %s has %d messages, %d through the index", topic, n, m.Indexed.Counts[topic])
			}
		}
		if m.Indexed.Statistics != total {
			t.Errorf("run.mcap: the statistics record counts %d messages, the file has %d", m.Indexed.Statistics, total)
		}
	}

	names := []string{"trace", "deliveries", "vehicles"}
	var files []string
	for _, n := range names {
		files = append(files, filepath.Join(kept, n+".parquet"))
	}
	var tabs map[string]struct {
		Columns  []string `json:"columns"`
		Rows     int      `json:"rows"`
		MetaRows int      `json:"metaRows"`
	}
	if err := nodetest.JSON(node, nodeDir, "parquet.mjs", &tabs, files...); err != nil {
		t.Fatalf("hyparquet cannot read the partial Parquet files: %v", err)
	}
	for i, n := range names {
		g := tabs[files[i]]
		if g.Rows == 0 || g.Rows != g.MetaRows || len(g.Columns) < 9 {
			t.Errorf("%s.parquet: %d rows (footer %d), columns %v", n, g.Rows, g.MetaRows, g.Columns)
		}
	}
	trace, vehicles := tabs[files[0]].Rows, tabs[files[2]].Rows
	t.Logf("kept %d trace rows, %d vehicle rows", trace, vehicles)
	if trace <= tables.GroupRows {
		t.Errorf("trace.parquet has %d rows, want more than a row group (%d) after 32 MiB of run.mcap", trace, tables.GroupRows)
	}
	if mcapOK && (m.Counts[foxglove.TopicNetwork] != trace || m.Counts[foxglove.TopicTF] != vehicles) {
		t.Errorf("trace.parquet has %d rows and vehicles.parquet %d; run.mcap has %d network events and %d transforms",
			trace, vehicles, m.Counts[foxglove.TopicNetwork], m.Counts[foxglove.TopicTF])
	}
}
