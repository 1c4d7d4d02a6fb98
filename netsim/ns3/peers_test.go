package ns3

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// TestLyingNS3: every line from ns-3 is checked against what is in flight
// (its lines come from another process: a bug there, or a different
// program behind SKYLOOP_NS3_BINARY, must not become a result). Each fake
// ns-3 answers the first synchronisation with one bad line.
func TestLyingNS3(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name     string
		dst      netsim.NodeID
		tsend    sim.Time
		start    string // shell commands at START (default: echo 'READY 3')
		run      string // lines printed at RUN, before DONE ($t is the time)
		want     string
		accepted bool // the line is fine
	}{
		{name: "good broadcast", dst: netsim.Broadcast, run: "echo \"RX $t 0 1 0 -50.000 10.000\"", accepted: true},
		{name: "late drop line", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 collision\"", accepted: true},
		{name: "to its sender", dst: netsim.Broadcast, run: "echo \"RX $t 0 0 0 -50.000 10.000\"", want: "its sender"},
		{name: "unicast elsewhere", dst: 1, run: "echo \"RX $t 0 2 0 -50.000 10.000\"", want: "not its destination"},
		{name: "before sending", dst: netsim.Broadcast, tsend: 500000, run: "echo \"RX 100 0 1 0 -50.000 10.000\"", want: "before its send time"},
		{name: "after the tick", dst: netsim.Broadcast, run: "echo \"RX 2000000 0 1 0 -50.000 10.000\"", want: "after"},
		{name: "twice", dst: netsim.Broadcast, run: "echo \"RX $t 0 1 0 -50.000 10.000\"; echo \"RX $t 0 1 0 -50.000 10.000\"", want: "twice"},
		{name: "never sent", dst: netsim.Broadcast, run: "echo \"RX $t 7 1 0 -50.000 10.000\"", want: "never sent"},
		{name: "wrong source", dst: netsim.Broadcast, run: "echo \"RX $t 0 1 2 -50.000 10.000\"", want: "source"},
		{name: "no node", dst: netsim.Broadcast, run: "echo \"RX $t 0 3 0 -50.000 10.000\"", want: "garbled"},
		{name: "drop at no node", dst: netsim.Broadcast, run: "echo \"DROP $t 0 -1 collision\"", want: "garbled"},
		{name: "endless setup line", start: "head -c 3000000 /dev/zero | tr '\\0' x; sleep 30", want: "longer than"},
		{name: "endless run line", dst: netsim.Broadcast, run: "head -c 3000000 /dev/zero | tr '\\0' x", want: "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := c.start
			if start == "" {
				start = "echo 'READY 3'"
			}
			run := c.run
			if run == "" {
				run = ":"
			}
			body := "while read l; do case $l in START) " + start + ";; RUN*) t=${l#RUN }; " + run + "; echo \"DONE $t\";; QUIT) exit 0;; esac; done\n"
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("SKYLOOP_NS3_BINARY", path)
			p := DefaultParams()
			p.SyncTimeout = 2 * sim.Second
			b, _ := New(p, 1, nil)
			defer b.Close()
			err := b.Start([]netsim.NodeInfo{{ID: 0}, {ID: 1, Pos: geom.V(10, 0, 0)}, {ID: 2, Pos: geom.V(0, 10, 0)}})
			var ds []netsim.Delivery
			if err == nil {
				var pool netsim.PacketPool
				pk := pool.Get(0)
				pk.ID, pk.Src, pk.Dst, pk.Size, pk.TSend = 0, 0, c.dst, 10, c.tsend
				b.Send(pk)
				ds, err = b.AdvanceTo(sim.Time(sim.Millisecond))
			}
			if c.accepted {
				if err != nil {
					t.Fatalf("a good line was refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %d deliveries %v", len(ds), ds)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ns-3 pid ") {
				t.Fatalf("error %q lacks %q or ns-3's pid", err, c.want)
			}
		})
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReadLineBounded: a line without an end is not read beyond the line
// limit (a setup answer without a newline used to be read until memory ran
// out).
func TestReadLineBounded(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		chunk := []byte(strings.Repeat("x", 4096))
		for i := 0; i < 16<<20/len(chunk); i++ {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	cr := &countingReader{r: pr}
	exited := make(chan struct{})
	close(exited)
	b := &Backend{rd: bufio.NewReaderSize(cr, 1<<16), stderr: &tail{}, exited: exited}
	_, err := b.readLine()
	pr.Close()
	if err == nil {
		t.Fatal("a 16 MiB line was accepted")
	}
	if n := cr.n.Load(); n > 1<<20 {
		t.Fatalf("read %d bytes of one line (error %v)", n, err)
	}
	if !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("error %q does not say the line is too long", err)
	}
}
