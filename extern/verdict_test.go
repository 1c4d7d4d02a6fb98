package extern

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"skyloop/netsim"
	"skyloop/sim"
)

// traceLog records the trace events of a backend.
type traceLog struct{ ev []netsim.TraceEvent }

func (l *traceLog) Trace(e *netsim.TraceEvent) { l.ev = append(l.ev, *e) }

// netFixture is an extern network backend without a process: four nodes,
// and packets 0 (broadcast from 0 at 1 ms), 1 (unicast 1 to 2 at 1.2 ms)
// and 2 (unicast 3 to itself at 0) in flight.
func netFixture() (*NetBackend, *traceLog, *netsim.PacketPool) {
	log := &traceLog{}
	p := DefaultNetParams()
	b := NewNetBackend(&p, log)
	b.n = 4
	pool := &netsim.PacketPool{}
	for i, s := range []struct {
		src, dst netsim.NodeID
		at       sim.Time
	}{{0, netsim.Broadcast, sim.Time(sim.Millisecond)}, {1, 2, sim.Time(1200 * sim.Microsecond)}, {3, 3, 0}} {
		pk := pool.Get(0)
		pk.ID, pk.Src, pk.Dst, pk.TSend, pk.Size = uint64(i), s.src, s.dst, s.at, 10
		b.Send(pk)
	}
	b.pending = b.pending[:0]
	log.ev = log.ev[:0]
	return b, log, pool
}

// TestVerdictChecks: each verdict is checked against what is in flight, and
// a frame with one bad verdict changes nothing.
func TestVerdictChecks(t *testing.T) {
	const now = sim.Time(2 * sim.Millisecond)
	cases := []struct {
		name   string
		events []NetEvent
		rel    []uint64
		want   string // "" = accepted
	}{
		{"broadcast everywhere", []NetEvent{{ID: 0, Dst: 1, At: 1e6}, {ID: 0, Dst: 2, At: 2e6}, {ID: 0, Dst: 3, At: 15e5, Drop: "range"}}, []uint64{0}, ""},
		{"unicast", []NetEvent{{ID: 1, Dst: 2, At: 13e5}}, []uint64{1}, ""},
		{"unicast to itself", []NetEvent{{ID: 2, Dst: 3, At: 0, Drop: "no_route"}}, []uint64{2}, ""},
		{"release unsettled", nil, []uint64{0, 1}, ""},
		{"twice in a frame", []NetEvent{{ID: 0, Dst: 1, At: 1e6}, {ID: 0, Dst: 1, At: 1e6}}, nil, "second verdict"},
		{"drop and reception", []NetEvent{{ID: 0, Dst: 1, At: 1e6, Drop: "collision"}, {ID: 0, Dst: 1, At: 2e6}}, nil, "second verdict"},
		{"to the sender", []NetEvent{{ID: 0, Dst: 0, At: 1e6}}, nil, "its sender"},
		{"drop at the sender", []NetEvent{{ID: 0, Dst: 0, At: 1e6, Drop: "range"}}, nil, "its sender"},
		{"unicast elsewhere", []NetEvent{{ID: 1, Dst: 3, At: 13e5}}, nil, "not its destination"},
		{"unicast at its sender", []NetEvent{{ID: 1, Dst: 1, At: 13e5}}, nil, "not its destination"},
		{"before sending", []NetEvent{{ID: 1, Dst: 2, At: 1e6}}, nil, "before its send time"},
		{"after the tick", []NetEvent{{ID: 1, Dst: 2, At: 2e6 + 1}}, nil, "after the tick"},
		{"no node", []NetEvent{{ID: 0, Dst: 4, At: 1e6}}, nil, "no node 4"},
		{"unknown packet", []NetEvent{{ID: 9, Dst: 1, At: 1e6}}, nil, "not in flight"},
		{"unknown reason", []NetEvent{{ID: 0, Dst: 1, At: 1e6, Drop: "gremlins"}}, nil, "unknown drop reason"},
		{"released twice", nil, []uint64{0, 0}, "not in flight"},
		{"good then bad", []NetEvent{{ID: 0, Dst: 1, At: 1e6}, {ID: 0, Dst: 0, At: 1e6}}, []uint64{1}, "its sender"},
	}
	for _, c := range cases {
		b, log, pool := netFixture()
		err := b.apply(now, &Frame{Type: TypeNetDone, Events: c.events, Release: c.rel})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			if len(log.ev) != len(c.events) {
				t.Errorf("%s: %d trace events for %d verdicts", c.name, len(log.ev), len(c.events))
			}
		} else {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
			}
			if len(log.ev) != 0 || len(b.out) != 0 || len(b.settled) != 0 || len(b.inflight) != 3 {
				t.Errorf("%s: a refused frame left %d trace events, %d deliveries, %d verdicts, %d packets in flight",
					c.name, len(log.ev), len(b.out), len(b.settled), len(b.inflight))
			}
		}
		b.Close()
		if pool.Live() != 0 {
			t.Errorf("%s: %d packets leaked", c.name, pool.Live())
		}
	}
	// A verdict after its packet's release, and a second verdict in a later
	// frame, are refused too.
	b, _, _ := netFixture()
	if err := b.apply(now, &Frame{Events: []NetEvent{{ID: 0, Dst: 1, At: 1e6}}, Release: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	if err := b.apply(now+1, &Frame{Events: []NetEvent{{ID: 0, Dst: 1, At: 2e6}}}); err == nil || !strings.Contains(err.Error(), "second verdict") {
		t.Errorf("a repeat in a later frame: %v", err)
	}
	if err := b.apply(now+1, &Frame{Events: []NetEvent{{ID: 1, Dst: 2, At: 2e6}}}); err == nil || !strings.Contains(err.Error(), "not in flight") {
		t.Errorf("a verdict after release: %v", err)
	}
}

// FuzzNetDone feeds arbitrary net_done frames (one JSON frame per line,
// one tick per frame) to a backend with packets in flight: it never
// panics, never leaks a packet, a refused frame changes nothing, and every
// verdict it accepts is valid: one per packet and intended receiver,
// between the send time and the tick.
func FuzzNetDone(f *testing.F) {
	seed := func(frames ...Frame) {
		var buf bytes.Buffer
		for _, fr := range frames {
			fr.Type = TypeNetDone
			b, _ := json.Marshal(fr)
			buf.Write(b)
			buf.WriteByte('\n')
		}
		f.Add(buf.Bytes())
	}
	seed(Frame{Events: []NetEvent{{ID: 0, Dst: 1, At: 1e6}, {ID: 0, Dst: 2, At: 2e6}, {ID: 1, Dst: 2, At: 13e5, Drop: "queue"}}, Release: []uint64{1}},
		Frame{Events: []NetEvent{{ID: 0, Dst: 3, At: 3e6}}, Release: []uint64{0, 2}})
	seed(Frame{Events: []NetEvent{{ID: 0, Dst: 1, At: 1e6}, {ID: 0, Dst: 1, At: 1e6}}})
	seed(Frame{Events: []NetEvent{{ID: 2, Dst: 3, At: 0, Drop: "no_route"}, {ID: 0, Dst: 0, At: 1e6}}}, Frame{Release: []uint64{2, 2}})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, log, pool := netFixture()
		type key struct {
			id  uint64
			dst netsim.NodeID
		}
		seen := map[key]bool{}
		now := sim.Time(2 * sim.Millisecond)
		for _, line := range bytes.Split(data, []byte("\n")) {
			fr, err := DecodeFrame(line)
			if err != nil {
				continue
			}
			n := len(log.ev)
			b.dead.Flush()
			b.out = b.out[:0]
			if err := b.apply(now, fr); err != nil {
				if len(log.ev) != n || len(b.out) != 0 {
					t.Fatalf("refused frame %s left events", line)
				}
				continue
			}
			for _, e := range log.ev[n:] {
				p := e.P
				k := key{p.ID, e.Node}
				switch {
				case seen[k]:
					t.Fatalf("%s: a second verdict for packet %d at node %d", line, p.ID, e.Node)
				case p.Dst == netsim.Broadcast && e.Node == p.Src:
					t.Fatalf("%s: a verdict at the sender", line)
				case p.Dst != netsim.Broadcast && e.Node != p.Dst:
					t.Fatalf("%s: a verdict for unicast packet %d at node %d", line, p.ID, e.Node)
				case e.T < p.TSend || e.T > now:
					t.Fatalf("%s: a verdict at %v for a packet sent at %v, tick %v", line, e.T, p.TSend, now)
				}
				seen[k] = true
			}
			now += sim.Time(sim.Millisecond)
		}
		b.Close()
		if pool.Live() != 0 {
			t.Fatalf("%d packets leaked", pool.Live())
		}
	})
}
