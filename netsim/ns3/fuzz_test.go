package ns3

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"skyloop/netsim"
	"skyloop/sim"
)

// FuzzLine feeds arbitrary output lines to the line checker of a backend
// with three packets in flight among three nodes (no process): it never
// panics, never leaks or double-frees a packet, and every outcome it
// accepts is one ns-3 may report: a reception or a loss of a packet in
// flight, at a receiver it was meant for, at most one outcome per packet and
// receiver, a reception from its source, between its send time and the
// synchronisation time, a loss with one of ns-3's reasons.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		"RX 1000000 0 1 0 -50.000 10.000\nRX 1000000 0 2 0 nan nan\nDONE 2000000\n",
		"RX 1500000 1 2 1 -60.5 3\nDROP 1200000 2 0 collision\nDONE 2000000\n",
		"RX 1000000 2 2 2 -50 1\nRX 1000000 0 0 0 -50 1\n",
		"RX 100 1 2 1 -50 1\nRX 2000001 0 1 0 -50 1\nRX 1 9 1 0 -50 1\n",
		"DROP 5 0 1 retry_limit\nDROP 5 0 7 queue\nDONE -1\n",
		"DROP 1300000 1 2 no_route\nRX 1400000 1 2 1 -50 1\nDROP 1000000 0 0 ttl\n",
		"DROP 1000000 0 1 end_of_run\nDROP 1000000 0 2 collision\nRX 1500000 0 2 0 -50 1\n",
	} {
		f.Add([]byte(s))
	}
	const end = sim.Time(2 * sim.Millisecond)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := DefaultParams()
		p.Mode = "OfdmRate6Mbps"
		b := &Backend{p: p, tr: netsim.Tracers(nil), pend: map[uint64]*pending{}, n: 3, rxAt: make([]int64, 3),
			stdin: bufio.NewWriter(io.Discard), stderr: &tail{}}
		var pool netsim.PacketPool
		for i, s := range []struct {
			src, dst netsim.NodeID
			at       sim.Time
		}{{0, netsim.Broadcast, sim.Time(sim.Millisecond)}, {1, 2, sim.Time(1200 * sim.Microsecond)}, {2, netsim.Broadcast, 0}} {
			pk := pool.Get(0)
			pk.ID, pk.Src, pk.Dst, pk.TSend, pk.Size = uint64(i), s.src, s.dst, s.at, 10
			b.Send(pk)
		}
		type key struct {
			id  uint64
			dst netsim.NodeID
		}
		seen := map[key]bool{}
		seq := len(b.events)
		for _, l := range bytes.Split(data, []byte("\n")) {
			n := len(b.events)
			done, err := b.line(l, end, &seq)
			if err != nil {
				if len(b.events) != n {
					t.Fatalf("%q refused, yet it left an event", l)
				}
				break
			}
			for _, e := range b.events[n:] {
				pk := e.p
				k := key{pk.ID, e.node}
				switch {
				case e.kind != netsim.EvRx && e.kind != netsim.EvDrop:
					t.Fatalf("%q: a %v event", l, e.kind)
				case e.kind == netsim.EvDrop && (e.why == netsim.DropNone || e.why == netsim.DropEndOfRun):
					t.Fatalf("%q: a loss with reason %v", l, e.why)
				case seen[k]:
					t.Fatalf("%q: packet %d has two outcomes at node %d", l, pk.ID, e.node)
				case pk.Dst == netsim.Broadcast && e.node == pk.Src:
					t.Fatalf("%q: a broadcast received at its sender", l)
				case pk.Dst != netsim.Broadcast && e.node != pk.Dst:
					t.Fatalf("%q: a unicast received at node %d, not %d", l, e.node, pk.Dst)
				case e.t < pk.TSend || e.t > end:
					t.Fatalf("%q: received at %v, sent at %v, synchronised to %v", l, e.t, pk.TSend, end)
				}
				seen[k] = true
			}
			if done {
				break
			}
		}
		b.settle()
		for _, d := range b.out {
			if d.P == nil || d.At > end || d.At < d.P.TSend {
				t.Fatalf("delivery %+v", d)
			}
		}
		b.Close()
		if pool.Live() != 0 {
			t.Fatalf("%d packets leaked", pool.Live())
		}
	})
}
