package ns3

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"skyloop/edge"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// TestLyingNS3: every line from ns-3 is checked against what is in flight
// (its lines come from another process: a bug there, or a different
// program behind SKYLOOP_NS3_BINARY, must not become a result). Each fake
// ns-3 answers a synchronisation with one bad line (the first, or the
// second where the lie needs two).
func TestLyingNS3(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name     string
		dst      netsim.NodeID
		tsend    sim.Time
		start    string // shell commands at START (default: echo 'READY 3')
		run      string // lines printed at RUN, before DONE ($t is the time)
		syncs    int    // synchronisations, at 1 ms, 2 ms, ... (0: one)
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
		{name: "good drop", dst: 1, run: "echo \"DROP $t 0 1 retry_limit\"", accepted: true},
		{name: "good drops", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 no_route\"; echo \"DROP $t 0 2 ttl\"", accepted: true},
		{name: "drop at its sender", dst: netsim.Broadcast, run: "echo \"DROP $t 0 0 collision\"", want: "its sender"},
		{name: "drop elsewhere", dst: 1, run: "echo \"DROP $t 0 2 retry_limit\"", want: "not its destination"},
		{name: "drop before sending", dst: netsim.Broadcast, tsend: 500000, run: "echo \"DROP 100 0 1 collision\"", want: "before its send time"},
		{name: "drop after the tick", dst: netsim.Broadcast, run: "echo \"DROP 2000000 0 1 collision\"", want: "after"},
		{name: "drop twice", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 collision\"; echo \"DROP $t 0 1 busy\"", want: "twice"},
		{name: "received after its drop", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 collision\"; echo \"RX $t 0 1 0 -50.000 10.000\"", want: "twice"},
		{name: "dropped after its reception", dst: 1, run: "echo \"RX $t 0 1 0 -50.000 10.000\"; echo \"DROP $t 0 1 collision\"", want: "twice"},
		{name: "unknown reason", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 cosmic_rays\"", want: "unknown reason"},
		{name: "end of run from ns-3", dst: netsim.Broadcast, run: "echo \"DROP $t 0 1 end_of_run\"", want: "unknown reason"},
		{name: "drop never sent", dst: netsim.Broadcast, run: "echo \"DROP $t 7 1 collision\"", want: "never sent"},
		{name: "settled already", dst: 1, syncs: 2, run: "echo \"RX $t 0 1 0 -50.000 10.000\"", want: "has an outcome already"},
		{name: "before the previous sync", dst: 1, syncs: 2, run: "[ $t = 2000000 ] && echo \"RX 100 0 1 0 -50.000 10.000\"", want: "before the previous synchronisation"},
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
			p.SyncTimeout, p.Epoch = 2*sim.Second, sim.Millisecond
			b, _ := New(p, 1, nil)
			defer b.Close()
			err := b.Start([]netsim.NodeInfo{{ID: 0}, {ID: 1, Pos: geom.V(10, 0, 0)}, {ID: 2, Pos: geom.V(0, 10, 0)}})
			var ds []netsim.Delivery
			if err == nil {
				var pool netsim.PacketPool
				pk := pool.Get(0)
				pk.ID, pk.Src, pk.Dst, pk.Size, pk.TSend = 0, 0, c.dst, 10, c.tsend
				b.Send(pk)
				for i := 1; i <= max(1, c.syncs) && err == nil; i++ {
					ds, err = b.AdvanceTo(sim.Time(int64(i) * int64(sim.Millisecond)))
				}
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

// TestLyingCounters: ns-3's answer to COUNTERS at Close is checked like
// every other line: each fake ns-3 reports one reception of packet 0 at
// node 1, then answers COUNTERS with its lines; a good answer becomes
// routing.csv, a bad one fails Close with an error naming ns-3 and no file.
func TestLyingCounters(t *testing.T) {
	dir := t.TempDir()
	good := []string{"COUNT 0 1 92 0 0 0 0 0 0", "COUNT 1 0 0 0 1 92 0 0 0", "COUNT 2 0 0 0 0 0 0 0 0", "END 3"}
	with := func(i int, l string) []string {
		c := append([]string(nil), good...)
		c[i] = l
		return c
	}
	cases := []struct {
		name    string
		routing string
		lines   []string
		after   string // shell commands after the lines
		want    string // "": accepted
	}{
		{name: "good", lines: good},
		{name: "good aodv", routing: "aodv", lines: with(2, "COUNT 2 0 0 0 0 0 3 144 5")},
		{name: "out of order", lines: with(0, "COUNT 1 0 0 0 1 92 0 0 0"), want: "where node 0's were due"},
		{name: "no such node", lines: with(2, "COUNT 7 0 0 0 0 0 0 0 0"), want: "where node 2's were due"},
		{name: "not a number", lines: with(0, "COUNT 0 1 9x2 0 0 0 0 0 0"), want: "garbled counter line"},
		{name: "negative", lines: with(0, "COUNT 0 -1 92 0 0 0 0 0 0"), want: "garbled counter line"},
		{name: "too large", lines: with(0, "COUNT 0 1 99999999999999999999 0 0 0 0 0 0"), want: "garbled counter line"},
		{name: "short line", lines: with(0, "COUNT 0 1 92 0 0 0 0 0"), want: "garbled counter line"},
		{name: "tiny packets", lines: with(0, "COUNT 0 1 10 0 0 0 0 0 0"), want: "impossible byte counts"},
		{name: "huge packets", lines: with(1, "COUNT 1 0 0 0 1 70000 0 0 0"), want: "impossible byte counts"},
		{name: "bytes without packets", routing: "olsr", lines: with(2, "COUNT 2 0 0 0 0 0 0 50 0"), want: "impossible byte counts"},
		{name: "forwards more than it sends", routing: "aodv", lines: with(2, "COUNT 2 1 92 2 0 0 0 0 0"), want: "forwarding 2"},
		{name: "fewer receptions than reported", lines: with(1, "COUNT 1 0 0 0 0 0 0 0 0"), want: "but reported 1 receptions"},
		{name: "control without routing", lines: with(2, "COUNT 2 0 0 0 0 0 1 48 0"), want: "without a routing protocol"},
		{name: "wrong end", lines: with(3, "END 4"), want: "garbled counter line"},
		{name: "no end", lines: good[:3], after: "exit 0", want: "exited unexpectedly"},
		{name: "hang", lines: good[:2], after: "sleep 30", want: "gave no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var answer strings.Builder
			for _, l := range c.lines {
				answer.WriteString("echo '" + l + "'; ")
			}
			answer.WriteString(c.after)
			body := "while read l; do case $l in START) echo 'READY 3';; RUN*) t=${l#RUN }; echo \"RX $t 0 1 0 -50 10\"; echo \"DONE $t\";; " +
				"COUNTERS) " + answer.String() + ";; QUIT) exit 0;; esac; done\n"
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("SKYLOOP_NS3_BINARY", path)
			p := DefaultParams()
			p.SyncTimeout = 500 * sim.Millisecond
			if c.routing != "" {
				p.Routing = c.routing
			}
			b, _ := New(p, 1, nil)
			files := map[string]*strings.Builder{}
			b.Open(&edge.Env{Create: func(name string) (io.Writer, error) {
				files[name] = &strings.Builder{}
				return files[name], nil
			}})
			if err := b.Start([]netsim.NodeInfo{{ID: 0}, {ID: 1, Pos: geom.V(10, 0, 0)}, {ID: 2, Pos: geom.V(0, 10, 0)}}); err != nil {
				t.Fatal(err)
			}
			var pool netsim.PacketPool
			pk := pool.Get(0)
			pk.ID, pk.Src, pk.Dst, pk.Size = 0, 0, 1, 64
			b.Send(pk)
			if _, err := b.AdvanceTo(sim.Time(sim.Millisecond)); err != nil {
				t.Fatal(err)
			}
			err := b.Close()
			if c.want == "" {
				if err != nil {
					t.Fatalf("a good answer was refused: %v", err)
				}
				want := RoutingHeader + "\n"
				for _, l := range c.lines[:3] {
					want += strings.ReplaceAll(strings.TrimPrefix(l, "COUNT "), " ", ",") + "\n"
				}
				if got := files["routing.csv"]; got == nil || got.String() != want {
					t.Fatalf("routing.csv:\n%v\nwant:\n%s", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ns-3 pid ") {
				t.Fatalf("Close: %v; want an error with %q and ns-3's pid", err, c.want)
			}
			if files["routing.csv"] != nil {
				t.Fatalf("routing.csv written from a bad answer: %s", files["routing.csv"])
			}
		})
	}
}

// TestValidateARP: arp is static (the default) or dynamic, nothing else.
func TestValidateARP(t *testing.T) {
	for arp, ok := range map[string]bool{"static": true, "dynamic": true, "": false, "Static": false, "none": false} {
		p := DefaultParams()
		p.ARP = arp
		bad := p.Validate()
		if _, refused := bad["arp"]; refused == ok || len(bad) > 1 || (ok && len(bad) != 0) {
			t.Errorf("arp %q: %v", arp, bad)
		}
	}
	if DefaultParams().ARP != "static" {
		t.Errorf("default arp %q", DefaultParams().ARP)
	}
}
