package behavior

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// timesHost is a Host with a chosen network mode that records the send
// times.
type timesHost struct {
	net   agent.NetworkMode
	nodes []agent.NodeRef
	sent  []sim.Time
}

func (h *timesHost) Send(src netsim.NodeID, m *agent.Message)                  { h.sent = append(h.sent, m.TSend) }
func (h *timesHost) Event(t sim.Time, node netsim.NodeID, name, detail string) {}
func (h *timesHost) Tick() sim.Duration                                        { return sim.Millisecond }
func (h *timesHost) Nodes() []agent.NodeRef                                    { return h.nodes }
func (h *timesHost) Origin() geom.Geodetic                                     { return geom.Geodetic{} }
func (h *timesHost) File(name string) (io.Writer, error)                       { return nil, nil }
func (h *timesHost) Fail(node netsim.NodeID, err error)                        {}
func (h *timesHost) Network() agent.NetworkMode                                { return h.net }

// sendTimesOf starts a behaviour of spec with params p (nil: the
// defaults) on node index i of a 20-vehicle group and returns the started
// behaviour and its send times over [0, end): stepped as the engine steps
// it (epoch 0) or planned epoch by epoch.
func sendTimesOf(t *testing.T, spec agent.Spec, p agent.Params, seed uint64, i int, epoch, end sim.Duration) (agent.Behavior, []sim.Time) {
	t.Helper()
	h := &timesHost{net: agent.NetworkMode{Epoch: epoch}}
	for k := range 20 {
		h.nodes = append(h.nodes, agent.NodeRef{ID: netsim.NodeID(k), Name: "uav-" + string(rune('a'+k)), Group: "uav", Index: k})
	}
	h.nodes = append(h.nodes, agent.NodeRef{ID: 20, Name: "gcs"})
	if p == nil {
		p = spec.Params()
	}
	if bad := p.Validate(); len(bad) > 0 {
		t.Fatalf("%s: %v", spec.Name, bad)
	}
	b := spec.New(p)
	ctx, drv := agent.NewContext(h.nodes[i], h, nil, vehicle.Telemetry{}, sim.Stream(seed, "agent", i), nil)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tick := h.Tick()
	if epoch > 0 {
		pl := b.(agent.Planner)
		for t0 := sim.Time(0); t0 < sim.Time(end); t0 = t0.Add(epoch) {
			e := min(t0.Add(epoch), sim.Time(end))
			drv.SetNow(t0)
			drv.SetPlanning(e)
			pl.Plan(ctx, e)
			drv.SetPlanning(0)
		}
		return b, h.sent
	}
	period, offset := b.Schedule()
	if period%tick != 0 || offset%tick != 0 {
		t.Fatalf("%s: Schedule() = %v, %v: not whole ticks", spec.Name, period, offset)
	}
	for t0 := sim.Time(offset); period > 0 && t0 < sim.Time(end); t0 = t0.Add(period) {
		drv.SetNow(t0)
		b.Step(ctx)
	}
	return b, h.sent
}

// TestSendTimesDefault: without any timing parameters a periodic sender
// starts at its group index times the stagger plus a phase in [0, period),
// and send k leaves within [0, period/10) after first + k*period: off the
// tick grid, not in lockstep with the other nodes, and at the nominal rate.
func TestSendTimesDefault(t *testing.T) {
	const P, J = 100 * sim.Millisecond, 10 * sim.Millisecond
	var phases []sim.Duration
	var maxJit sim.Duration
	offGrid := 0
	for i := range 20 {
		b, times := sendTimesOf(t, beaconSpec, nil, 1, i, 0, 10*sim.Second)
		bc := b.(*Beacon)
		ph := sim.Duration(bc.first) - sim.Duration(i)*bc.p.Stagger
		if ph < 0 || ph >= P {
			t.Fatalf("node %d: phase %v outside [0, %v)", i, ph, P)
		}
		phases = append(phases, ph)
		if len(times) < 97 || len(times) > 100 {
			t.Fatalf("node %d: %d sends in 10 s at 10 Hz", i, len(times))
		}
		for k, at := range times {
			j := at.Sub(bc.first.Add(sim.Duration(k) * P))
			if j < 0 || j >= J {
				t.Fatalf("node %d send %d at %v: %v after its nominal time, want [0, %v)", i, k, at, j, J)
			}
			maxJit = max(maxJit, j)
			if at%sim.Time(sim.Millisecond) != 0 {
				offGrid++
			}
		}
	}
	slices.Sort(phases)
	if phases[0] > 20*sim.Millisecond || phases[len(phases)-1] < 80*sim.Millisecond || len(slices.Compact(phases)) != 20 {
		t.Errorf("the 20 phases %v do not spread over the period", phases)
	}
	if maxJit < J/2 {
		t.Errorf("the largest jitter of 2000 sends is %v, want close to %v", maxJit, J)
	}
	if offGrid < 1900 {
		t.Errorf("only %d of 2000 sends off the 1 ms grid", offGrid)
	}
}

// TestSendTimesPlannedAsStepped: a beacon and a traffic source send at the
// same times whether stepped every tick or planned in epochs of any
// length, and a fresh copy (a replayed network's plan) draws the same.
func TestSendTimesPlannedAsStepped(t *testing.T) {
	tp := trafficSpec.Params().(*TrafficParams)
	tp.Rate, tp.Size, tp.Stagger = 8000, 30, 3*sim.Millisecond // 30 ms apart
	for _, c := range []struct {
		spec agent.Spec
		p    agent.Params
	}{{beaconSpec, nil}, {trafficSpec, tp}} {
		for _, i := range []int{0, 7} {
			_, stepped := sendTimesOf(t, c.spec, c.p, 3, i, 0, 5*sim.Second)
			if len(stepped) < 45 {
				t.Fatalf("%s node %d: %d sends", c.spec.Name, i, len(stepped))
			}
			for _, e := range []sim.Duration{sim.Millisecond, 10 * sim.Millisecond, 37 * sim.Millisecond, sim.Second} {
				if _, planned := sendTimesOf(t, c.spec, c.p, 3, i, e, 5*sim.Second); !slices.Equal(planned, stepped) {
					t.Errorf("%s node %d: planned in %v epochs: %d sends %v..., stepped: %d sends %v...", c.spec.Name, i, e, len(planned), planned[:3], len(stepped), stepped[:3])
				}
			}
		}
	}
}

// TestSendTimesSeeded: the same seed gives the same times; another seed
// other phases; the beacon, traffic and remote of one node draw apart.
func TestSendTimesSeeded(t *testing.T) {
	for _, spec := range []agent.Spec{beaconSpec, trafficSpec, remoteSpec} {
		var p agent.Params
		if spec.Name == "traffic" {
			tp := trafficSpec.Params().(*TrafficParams)
			tp.Rate = 80000 // 100 ms apart
			p = tp
		}
		same := 0
		for i := range 20 {
			_, a := sendTimesOf(t, spec, p, 1, i, 0, 2*sim.Second)
			_, b := sendTimesOf(t, spec, p, 1, i, 0, 2*sim.Second)
			_, c := sendTimesOf(t, spec, p, 2, i, 0, 2*sim.Second)
			if !slices.Equal(a, b) {
				t.Fatalf("%s node %d: seed 1 gave %v then %v", spec.Name, i, a[:2], b[:2])
			}
			if a[0] == c[0] {
				same++
			}
		}
		if same > 0 {
			t.Errorf("%s: seeds 1 and 2 gave %d of 20 nodes the same first send", spec.Name, same)
		}
	}
	b, _ := sendTimesOf(t, beaconSpec, nil, 1, 4, 0, sim.Second)
	r, _ := sendTimesOf(t, remoteSpec, nil, 1, 4, 0, sim.Second)
	if b.(*Beacon).first%sim.Time(100*sim.Millisecond) == r.(*Remote).first%sim.Time(100*sim.Millisecond) {
		t.Error("a node's beacon and remote drew the same phase")
	}
}

// TestSendTimesZero: phase: zero and jitter: 0 restore the fixed
// timetable i*stagger + k*period, stepped once a period as before.
func TestSendTimesZero(t *testing.T) {
	bp := beaconSpec.Params().(*BeaconParams)
	bp.Phase, bp.Jitter, bp.Stagger = agent.PhaseZero, agent.Jitter{}, sim.Millisecond
	rp := remoteSpec.Params().(*RemoteParams)
	rp.Phase, rp.Jitter, rp.Stagger = agent.PhaseZero, agent.Jitter{}, 4*sim.Millisecond
	tp := trafficSpec.Params().(*TrafficParams)
	tp.Phase, tp.Jitter, tp.Stagger, tp.Rate, tp.Size = agent.PhaseZero, agent.Jitter{}, 2*sim.Millisecond, 8000, 50
	for _, c := range []struct {
		spec   agent.Spec
		p      agent.Params
		period sim.Duration
		stag   sim.Duration
	}{{beaconSpec, bp, 100 * sim.Millisecond, sim.Millisecond}, {remoteSpec, rp, 200 * sim.Millisecond, 4 * sim.Millisecond}, {trafficSpec, tp, 50 * sim.Millisecond, 2 * sim.Millisecond}} {
		b, times := sendTimesOf(t, c.spec, c.p, 1, 5, 0, 2*sim.Second)
		for k, at := range times {
			if want := sim.Time(5*c.stag + sim.Duration(k)*c.period); at != want {
				t.Fatalf("%s send %d at %v, want %v", c.spec.Name, k, at, want)
			}
		}
		if c.spec.Name == "traffic" {
			continue // steps every tick regardless
		}
		if p, off := b.Schedule(); p != c.period || off != 5*c.stag {
			t.Errorf("%s: Schedule() = %v, %v, want %v, %v (stepping once a period)", c.spec.Name, p, off, c.period, 5*c.stag)
		}
	}
}

// TestJitterParams: jitter reads as a duration, a percentage or 0, and
// writes back the same way; values that could reorder a sender's own
// sends, negative ones and unknown phases are refused with the reason.
func TestJitterParams(t *testing.T) {
	for in, want := range map[string]agent.Jitter{"5ms": {D: 5 * sim.Millisecond}, "10%": {Pct: 10}, "0": {}, " 2.5 % ": {Pct: 2.5}, "0%": {}} {
		got, err := agent.ParseJitter(in)
		if err != nil || got != want {
			t.Errorf("ParseJitter(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"5", "abc", "100%", "-1%", "x%"} {
		if _, err := agent.ParseJitter(in); err == nil {
			t.Errorf("ParseJitter(%q) accepted", in)
		}
	}
	if got := (agent.Jitter{Pct: 10}).Of(100 * sim.Millisecond); got != 10*sim.Millisecond {
		t.Errorf("10%% of 100 ms = %v", got)
	}
	b, _ := json.Marshal(beaconSpec.Params())
	if !strings.Contains(string(b), `"phase":"random","jitter":"10%"`) {
		t.Errorf("beacon defaults %s: want phase random and jitter 10%%", b)
	}
	var back BeaconParams
	if err := json.Unmarshal(b, &back); err != nil || back.Jitter != agent.DefaultJitter || back.Phase != agent.PhaseRandom {
		t.Errorf("defaults read back as %+v, %v", back, err)
	}

	bp := beaconSpec.Params().(*BeaconParams)
	bp.Jitter = agent.Jitter{D: 100 * sim.Millisecond}
	if msg := bp.Validate()["jitter"]; !strings.Contains(msg, "below the period 100ms") {
		t.Errorf("jitter = period: %q", msg)
	}
	bp.Jitter, bp.Phase = agent.Jitter{D: -sim.Millisecond}, agent.Phase(7)
	if bad := bp.Validate(); !strings.Contains(bad["jitter"], ">= 0") || !strings.Contains(bad["phase"], "random or zero") {
		t.Errorf("negative jitter, phase 7: %v", bad)
	}
	tp := trafficSpec.Params().(*TrafficParams)
	tp.Rate, tp.Jitter = 8000, agent.Jitter{D: sim.Second} // 1 s between 1000-byte packets
	if msg := tp.Validate()["jitter"]; !strings.Contains(msg, "packet interval") || !strings.Contains(msg, "1s") {
		t.Errorf("traffic jitter = interval: %q", msg)
	}
	tp.Rate = 0 // sends nothing: any jitter will do
	if bad := tp.Validate(); len(bad) > 0 {
		t.Errorf("rate 0: %v", bad)
	}
	rp := remoteSpec.Params().(*RemoteParams)
	rp.Jitter = agent.Jitter{D: 250 * sim.Millisecond}
	if msg := rp.Validate()["jitter"]; !strings.Contains(msg, "telemetry period 200ms") {
		t.Errorf("remote jitter above the period: %q", msg)
	}
	var ph agent.Phase
	if err := ph.UnmarshalText([]byte("late")); err == nil || !strings.Contains(err.Error(), "random or zero") {
		t.Errorf("phase late: %v", err)
	}
}
