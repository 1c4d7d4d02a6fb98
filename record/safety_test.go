package record

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"skyloop/internal/short"
	"strings"
	"testing"
)

func mustCreate(t *testing.T, dest string) *Dir {
	t.Helper()
	d, err := CreateIn(OS, dest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAbortNeverDeletesAForeignIncompleteDirectory: a user's own directory
// named <dest>.incomplete survives a failed run, whose partial files go to
// the next free name.
func TestAbortNeverDeletesAForeignIncompleteDirectory(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	writeFile(t, filepath.Join(dest+".incomplete", "notes.txt"), "mine")
	d := mustCreate(t, dest)
	kept := d.Abort(errors.New("boom"))
	if got := readFile(t, filepath.Join(dest+".incomplete", "notes.txt")); got != "mine" {
		t.Fatalf("the user's file changed: %q", got)
	}
	if kept != dest+".incomplete.1" {
		t.Fatalf("kept in %s", kept)
	}
	if got := readFile(t, filepath.Join(kept, "ERROR.txt")); got != "boom\n" {
		t.Fatalf("ERROR.txt = %q", got)
	}
	// An earlier failed run's partial directory (ours) is replaced.
	d = mustCreate(t, dest)
	if kept2 := d.Abort(errors.New("again")); kept2 != dest+".incomplete.1" && kept2 != dest+".incomplete.2" {
		t.Fatalf("second abort kept in %s", kept2)
	}
	if got := readFile(t, filepath.Join(dest+".incomplete", "notes.txt")); got != "mine" {
		t.Fatal("the user's directory was touched by the second abort")
	}
}

// TestCommitNeverClobbersWhatAppearedMeanwhile: a directory put at the
// destination while the run was going is left alone; the finished run is
// kept under a new name and the error says where.
func TestCommitNeverClobbersWhatAppearedMeanwhile(t *testing.T) {
	for _, before := range []string{"nothing", "run", "empty"} {
		t.Run(before, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "seed1")
			switch before {
			case "run":
				d := mustCreate(t, dest)
				if err := d.Commit(); err != nil {
					t.Fatal(err)
				}
			case "empty":
				os.Mkdir(dest, 0o755)
			}
			d := mustCreate(t, dest)
			writeFile(t, d.Path("summary.json"), "{}")
			// Meanwhile the user replaces the destination with their own.
			os.RemoveAll(dest)
			writeFile(t, filepath.Join(dest, "thesis.tex"), "precious")
			err := d.Commit()
			var ke *KeptError
			if !errors.As(err, &ke) || !ke.Complete || !errors.Is(err, ErrDestChanged) {
				t.Fatalf("Commit over a replaced destination: %v", err)
			}
			if got := readFile(t, filepath.Join(dest, "thesis.tex")); got != "precious" {
				t.Fatal("the user's file was clobbered")
			}
			if ke.Kept != dest+".1" || readFile(t, filepath.Join(ke.Kept, "summary.json")) != "{}" {
				t.Fatalf("finished run not kept: %v", err)
			}
			if !strings.Contains(err.Error(), dest+".1") || strings.Contains(err.Error(), ".tmp-") {
				t.Fatalf("message %q should name the kept path and no temporary one", err)
			}
			assertNoTemporaries(t, filepath.Dir(dest))
		})
	}
}

// TestCommitReplacesOnlyTheSameRun: the earlier run directory seen at the
// start is replaced; a removed one is simply not there any more.
func TestCommitReplacesOnlyTheSameRun(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d := mustCreate(t, dest)
	writeFile(t, d.Path("v"), "1")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	d = mustCreate(t, dest)
	writeFile(t, d.Path("v"), "2")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dest, "v")) != "2" {
		t.Fatal("not replaced")
	}
	d = mustCreate(t, dest)
	os.RemoveAll(dest) // the user removed the old run meanwhile: fine
	writeFile(t, d.Path("v"), "3")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dest, "v")) != "3" {
		t.Fatal("not committed")
	}
	assertNoTemporaries(t, filepath.Dir(dest))
}

// TestSecondWriterIsRefused: two runs into one destination at once: the
// second is refused up front and the first one's results survive.
func TestSecondWriterIsRefused(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	first := mustCreate(t, dest)
	_, err := CreateIn(OS, dest)
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) || be.PID != os.Getpid() {
		t.Fatalf("second Create: %v", err)
	}
	writeFile(t, first.Path("v"), "first")
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dest, "v")) != "first" {
		t.Fatal("first run lost")
	}
	// Released: the next run may go.
	second := mustCreate(t, dest)
	second.Discard()
	assertNoTemporaries(t, filepath.Dir(dest))
}

// TestLockIsHeldAcrossProcesses: the lock is a kernel lock, seen by another
// process (flock(1) from util-linux when present, else a child test
// process).
func TestLockIsHeldAcrossProcesses(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	if os.Getenv("SKYLOOP_LOCK_CHILD") != "" {
		return
	}
	d := mustCreate(t, dest)
	defer d.Discard()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SKYLOOP_LOCK_CHILD="+dest)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused: ") {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

// TestLockChild is run by TestLockIsHeldAcrossProcesses in a child process.
func TestLockChild(t *testing.T) {
	dest := os.Getenv("SKYLOOP_LOCK_CHILD")
	if dest == "" {
		t.Skip("only run as a child of TestLockIsHeldAcrossProcesses")
	}
	_, err := CreateIn(OS, dest)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Create in a second process: %v", err)
	}
	t.Logf("refused: %v", err)
}

// TestStaleTemporariesAreCleaned: a run killed mid-way leaves its
// temporary directory; the next run into the same place removes it (and
// nothing that is not ours).
func TestStaleTemporariesAreCleaned(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "seed1")
	d := mustCreate(t, dest)
	writeFile(t, d.Path("trace.csv"), strings.Repeat("x", 1000))
	d.closeFiles()
	d.lock.Unlock() // as if the process died: the kernel drops its lock
	foreign := filepath.Join(dir, ".seed1.tmp-mine")
	writeFile(t, filepath.Join(foreign, "keep.txt"), "x")
	d2 := mustCreate(t, dest)
	if _, err := os.Stat(d.tmp); !os.IsNotExist(err) {
		t.Fatal("stale temporary directory not removed")
	}
	if readFile(t, filepath.Join(foreign, "keep.txt")) != "x" {
		t.Fatal("a directory without the marker was touched")
	}
	if err := d2.Commit(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(foreign)
	assertNoTemporaries(t, dir)
}

// TestErrorTextIsNeverEmptyNorTemporary: ERROR.txt always says something,
// and paths inside the temporary directory are reported at the kept path.
func TestErrorTextIsNeverEmptyNorTemporary(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d := mustCreate(t, dest)
	kept := d.Abort(errors.New(""))
	if got := strings.TrimSpace(readFile(t, filepath.Join(kept, "ERROR.txt"))); got == "" {
		t.Fatal("empty ERROR.txt")
	}
	d = mustCreate(t, dest)
	cause := &os.PathError{Op: "write", Path: d.Path("trace.csv"), Err: errors.New("no space left on device")}
	err := d.Fail(cause)
	if strings.Contains(err.Error(), ".tmp-") || !strings.Contains(err.Error(), dest+".incomplete") {
		t.Fatalf("message names a temporary path: %v", err)
	}
	if got := readFile(t, filepath.Join(dest+".incomplete", "ERROR.txt")); strings.Contains(got, ".tmp-") {
		t.Fatalf("ERROR.txt names a temporary path: %q", got)
	}
	if !errors.Is(err, cause) {
		t.Fatal("cause not wrapped")
	}
	// A later successful run removes the stale partial directory.
	d = mustCreate(t, dest)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest + ".incomplete"); !os.IsNotExist(err) {
		t.Fatal("stale .incomplete kept after a successful run")
	}
}

func assertNoTemporaries(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

// hostile are texts that break naive CSV writers.
var hostile = []string{"plain", "", "a,b", `say "hi"`, "two\nlines", "cr\r\nlf", "lone\rcr", " leading space", "\ttab", `\.`,
	"nul\x00byte", "bad utf8 \xff\xfe", "ünïcödé, with comma", `"`, ",", "\n"}

// TestCSVFieldsRoundTrip: whatever text a field holds, Go's csv reader and
// Python's csv module read back exactly the text (after the documented
// replacement of NUL and invalid UTF-8 by U+FFFD).
func TestCSVFieldsRoundTrip(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "run")
	d := mustCreate(t, dest)
	c, err := d.CSV("events.csv", "i,text,tail")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range hostile {
		c.Int(int64(i)).Str(s).Quoted(s + "!").End()
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	want := func(s string) string {
		return strings.ToValidUTF8(strings.NewReplacer("\x00", "\uFFFD", "\r\n", "\n", "\r", "\n").Replace(s), "\uFFFD")
	}
	f, _ := os.Open(filepath.Join(dest, "events.csv"))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("Go's csv reader: %v", err)
	}
	if len(rows) != len(hostile)+1 {
		t.Fatalf("Go read %d rows, want %d", len(rows), len(hostile)+1)
	}
	for i, s := range hostile {
		if !reflect.DeepEqual(rows[i+1][1:], []string{want(s), want(s + "!")}) {
			t.Errorf("row %d: Go read %q, want %q", i, rows[i+1][1:], []string{want(s), want(s + "!")})
		}
	}
	short.Skip(t, "needs python3")
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatal("python3 required (SKYLOOP_REQUIRE_PYTHON) but not found")
		}
		t.Skip("python3 not found: Python's csv module not checked")
	}
	script := `import csv, json, sys
with open(sys.argv[1], newline='', encoding='utf-8') as f:
    print(json.dumps([r[1:] for r in csv.reader(f)][1:]))`
	out, err := exec.Command(py, "-c", script, filepath.Join(dest, "events.csv")).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got [][]string
	if err := jsonUnmarshal(out, &got); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	for i, s := range hostile {
		if i >= len(got) || !reflect.DeepEqual(got[i], []string{want(s), want(s + "!")}) {
			t.Errorf("row %d: Python read %q, want %q", i, got, []string{want(s), want(s + "!")})
			break
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
