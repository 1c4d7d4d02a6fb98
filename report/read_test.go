package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/internal/hostile"
	"skyloop/internal/untrusted"
)

const (
	testSummary = `{"scenario":"s","seed":1,"duration_ns":DURATION,"backend":"ideal","nodes":2,
"network":{"by_kind":{"state":{"tx":1,"rx":1}}},
"vehicles":[{"id":0,"name":"a","kind":"multirotor"},{"id":1,"name":"b","kind":"multirotor"}]}`
	vehiclesHead   = "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v,current_a,pressure_pa\n"
	traceHead      = "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\n"
	deliveriesHead = "t_rx_ns,t_tick_ns,src,dst,seq,t_gen_ns,t_send_ns,bytes,kind,latency_ns,rx_dbm\n"
)

// writeRunDir writes a small finished run of 2 vehicles over duration ns.
func writeRunDir(t *testing.T, duration string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"summary.json":   strings.Replace(testSummary, "DURATION", duration, 1),
		"vehicles.csv":   vehiclesHead + "0,0,0,0,1,0,0,0,0,0,0,guided,true,0,0,0,0\n1000000000,1,5,5,1,0,0,0,0,0,0,guided,true,0,0,0,0\n",
		"trace.csv":      traceHead + "tx,1000,0,-1,1,1000,40,state,\nrx,2000,0,1,1,1000,40,state,\n",
		"deliveries.csv": deliveriesHead + "2000,2000,0,1,1,1000,1000,40,state,1000,-60\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// feedFIFO makes path a named pipe and writes up to n zero bytes into it
// once a reader opens it: an endless file, within bounds for the test.
func feedFIFO(t *testing.T, path string, n int) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		buf := make([]byte, 1<<20)
		for i := 0; i < n; i += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// A reader that refused the pipe never opened it for long: open
		// it so that the writer gets going, and close it so that it stops.
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
		<-done
	})
}

// TestRunHTMLReadsOnlyBoundedRegularFiles: a run directory whose tables
// are endless (a device, a named pipe), one endless line (a sparse
// file), larger than the cap, or links out of the directory is refused
// with an error naming the file, at a bounded cost in memory; nothing
// waits for a pipe's writer.
func TestRunHTMLReadsOnlyBoundedRegularFiles(t *testing.T) {
	for _, file := range []string{"vehicles.csv", "deliveries.csv", "trace.csv"} {
		for _, c := range []struct {
			name string
			make func(t *testing.T, path string)
			want error
		}{
			{"device", func(t *testing.T, p string) {
				os.Remove(p)
				if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
			}, nil}, // refused as a link out of the directory
			{"pipe", func(t *testing.T, p string) { feedFIFO(t, p, 512<<20) }, untrusted.ErrNotRegular},
			{"one-line", func(t *testing.T, p string) {
				// The header, then 256 MiB without a line break.
				if err := os.Truncate(p, 256<<20); err != nil {
					t.Fatal(err)
				}
			}, untrusted.ErrTooLarge},
			{"over-cap", func(t *testing.T, p string) {
				if err := os.Truncate(p, untrusted.MaxCSV+1); err != nil {
					t.Skipf("no sparse files here: %v", err)
				}
			}, untrusted.ErrTooLarge},
			{"link-out", func(t *testing.T, p string) {
				outside := filepath.Join(filepath.Dir(filepath.Dir(p)), "elsewhere.csv")
				b, _ := os.ReadFile(p)
				if err := os.WriteFile(outside, b, 0o644); err != nil {
					t.Fatal(err)
				}
				os.Remove(p)
				if err := os.Symlink(outside, p); err != nil {
					t.Fatal(err)
				}
			}, nil},
		} {
			t.Run(file+"/"+c.name, func(t *testing.T) {
				dir := writeRunDir(t, "10000000000")
				p := filepath.Join(dir, file)
				c.make(t, p)
				var err error
				alloc := hostile.Allocated(func() { _, err = RunHTML(dir) })
				if err == nil {
					t.Fatalf("RunHTML accepted %s as %s", c.name, file)
				}
				if c.want != nil && !errors.Is(err, c.want) {
					t.Errorf("error %v, want %v", err, c.want)
				}
				if !strings.Contains(err.Error(), file) {
					t.Errorf("the error does not name %s: %v", file, err)
				}
				if alloc > hostile.MaxAlloc {
					t.Errorf("reading it allocated %d MB", alloc>>20)
				}
				t.Logf("allocated %d KiB", alloc>>10)
			})
		}
	}
	t.Run("summary.json", func(t *testing.T) {
		dir := writeRunDir(t, "10000000000")
		os.Remove(filepath.Join(dir, "summary.json"))
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "summary.json")); err != nil {
			t.Fatal(err)
		}
		var err error
		alloc := hostile.Allocated(func() { _, err = RunHTML(dir) })
		if err == nil || !strings.Contains(err.Error(), "summary.json") || alloc > hostile.MaxAlloc {
			t.Errorf("summary.json on /dev/zero: %v (%d MB)", err, alloc>>20)
		}
	})
}

// TestRunHTMLChecksSummarySizes: sizes taken from summary.json (the run's
// duration, which sizes the PDR over time) are checked or bounded: a
// negative duration is an error naming the field, an enormous one is
// drawn in wider bins at a bounded cost.
func TestRunHTMLChecksSummarySizes(t *testing.T) {
	dir := writeRunDir(t, "-5000000000")
	if _, err := RunHTML(dir); err == nil || !strings.Contains(err.Error(), "duration_ns") || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("negative duration: %v", err)
	}
	dir = writeRunDir(t, "9000000000000000000")
	var page []byte
	var err error
	alloc := hostile.Allocated(func() { page, err = RunHTML(dir) })
	if err != nil || alloc > hostile.MaxAlloc || !strings.Contains(string(page), "PDR over time") {
		t.Errorf("a run of 285 years: %v, %d MB", err, alloc>>20)
	}
}

// TestRunHTMLBoundsKinds: a table with more traffic kinds than a run has
// is refused, naming the file.
func TestRunHTMLBoundsKinds(t *testing.T) {
	dir := writeRunDir(t, "10000000000")
	var b strings.Builder
	b.WriteString(deliveriesHead)
	for i := 0; i < MaxKinds+1; i++ {
		fmt.Fprintf(&b, "2000,2000,0,1,1,1000,1000,40,kind%d,1000,-60\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "deliveries.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunHTML(dir); err == nil || !strings.Contains(err.Error(), "deliveries.csv") || !strings.Contains(err.Error(), "kinds") {
		t.Errorf("%d kinds: %v", MaxKinds+1, err)
	}
}

// TestRunHTMLSmallRun: the small run's page has its figures.
func TestRunHTMLSmallRun(t *testing.T) {
	page, err := RunHTML(writeRunDir(t, "10000000000"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Trajectories", "Latency CDF", "PDR over time"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page has no %q", want)
		}
	}
}

// TestSamplesBounded: Samples is exact below MaxSamples, and past it
// keeps an evenly spaced sample of every stream within the cap.
func TestSamplesBounded(t *testing.T) {
	var s Samples
	for i := 0; i < 1000; i++ {
		s.Add("a", float64(i))
	}
	if v := s.Values("a"); len(v) != 1000 || v[999] != 999 {
		t.Fatalf("below the cap: %d values", len(v))
	}
	var big Samples
	alloc := hostile.Allocated(func() {
		for i := 0; i < 3*MaxSamples; i++ {
			big.Add([]string{"a", "b"}[i%2], float64(i))
		}
	})
	a, b := big.Values("a"), big.Values("b")
	if len(a)+len(b) > MaxSamples || len(a) < MaxSamples/4 || alloc > hostile.MaxAlloc {
		t.Fatalf("kept %d + %d values of %d, allocated %d MB", len(a), len(b), 3*MaxSamples, alloc>>20)
	}
	step := a[1] - a[0]
	for i := 1; i < len(a); i++ {
		if a[i]-a[i-1] != step {
			t.Fatalf("not evenly spaced at %d: %v %v", i, a[i-1], a[i])
		}
	}
}
