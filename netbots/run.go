package netbots

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/netsim/impair"
	"skyloop/netsim/tracecsv"
	"skyloop/record"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/groundbot"
)

// histLen is the state history kept per robot, in ticks (16 s at 2 ms):
// far longer than any delivery can take to be worth binding.
const histLen = 8192

// Metrics are one run's results.
type Metrics struct {
	// State updates (kind state).
	LatencyMeanMs float64 `json:"latency_mean_ms"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP95Ms  float64 `json:"latency_p95_ms"`
	LatencyMaxMs  float64 `json:"latency_max_ms"`
	PDR           float64 `json:"pdr"` // rx / (tx * (N-1)) for state updates
	DropRxError   uint64  `json:"drop_rx_error"`
	DropQueue     uint64  `json:"drop_queue"`
	StateTx       uint64  `json:"state_tx"`
	StateRx       uint64  `json:"state_rx"`
	AoIMeanS      float64 `json:"aoi_mean_s"`
	Duplicates    uint64  `json:"duplicates"`
	OutOfOrder    uint64  `json:"out_of_order"`
	StaleTicks    uint64  `json:"stale_ticks"` // follower ticks without a fresh belief
	// All traffic.
	PacketsPerS      float64 `json:"packets_per_s"`
	PayloadBytesPerS float64 `json:"payload_bytes_per_s"`
	IPBytesPerS      float64 `json:"ip_bytes_per_s"`
	// Control.
	GapErrMeanM   float64 `json:"gap_err_mean_m"`   // mean |dist - gap| over followers after the warm-up
	GapErrMaxM    float64 `json:"gap_err_max_m"`    // its maximum
	GapErrExcessM float64 `json:"gap_err_excess_m"` // mean minus the ideal-network reference's
	TrajDevMeanM  float64 `json:"traj_dev_mean_m"`  // mean distance from the reference trajectory
	TrajDevMaxM   float64 `json:"traj_dev_max_m"`
}

// Reference is the ideal-network run: followers read their predecessor's
// true state every tick.
type Reference struct {
	Robots      int           `json:"robots"`
	Duration    sim.Duration  `json:"duration"`
	Sample      sim.Duration  `json:"sample"`
	GapErrMeanM float64       `json:"gap_err_mean_m"`
	Positions   [][]geom.Vec3 `json:"positions"` // [robot][sample]
}

// Outputs selects the per-run files.
type Outputs struct {
	Trace      bool `yaml:"trace" json:"trace"`
	Deliveries bool `yaml:"deliveries" json:"deliveries"`
	Robots     bool `yaml:"robots" json:"robots"`
}

// rec is a delivery kept for consumption (the backend's packets are only
// valid until its next call).
type rec struct {
	src, dst netsim.NodeID
	kind     netsim.Kind
	seq      uint32
	size     int
	tgen     sim.Time
	tsend    sim.Time
	at       sim.Time
}

type snap struct{ x, y, theta, v, omega float64 }

type robot struct {
	v        *groundbot.Vehicle
	beliefs  *agent.Beliefs
	hist     [histLen]snap
	seq      uint32
	nextSend sim.Time
	sentOnce bool
	lastPos  geom.Vec3
	lastYaw  float64
	lastSent sim.Time
	bgNext   sim.Time
	bgK      int64
	bgStart  sim.Time
	wp       int
}

// runner is one run in progress.
type runner struct {
	p      Params
	seed   uint64
	ideal  bool // reference run: no network
	robots []*robot
	gp     groundbot.Params
	law    agent.PlatoonParams
	net    *impair.Backend
	pool   netsim.PacketPool
	pkt    netsim.Packet // scratch for metrics
	met    *metrics.Collector
	pend   []rec
	pHead  int
	nextID uint64
	bgIvl  float64 // ns
	stop   func() bool

	traceCSV, delivCSV, robotsCSV *record.CSV
	ev                            vehicle.Events

	gapSum   float64
	gapN     int64
	gapMax   float64
	stale    uint64
	samples  [][]geom.Vec3
	ref      *Reference
	devSum   float64
	devN     int64
	devMax   float64
	stateLat []int64
}

// ErrStopped is returned when a run was asked to stop.
var ErrStopped = sim.ErrStopped

func newRunner(p Params, seed uint64, ideal bool) (*runner, error) {
	if bad := p.Validate(); len(bad) > 0 {
		keys := make([]string, 0, len(bad))
		for k := range bad {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%s: %s", keys[0], bad[keys[0]])
	}
	r := &runner{p: p, seed: seed, ideal: ideal, gp: groundbot.DefaultParams()}
	r.gp.MaxSpeed = p.Speed
	r.gp.PhysicsPeriod, r.gp.ControlPeriod = p.Tick, p.Tick
	r.law = agent.DefaultPlatoonParams()
	r.law.Gap, r.law.GapGain, r.law.HeadGain, r.law.MaxSpeed = p.Gap, p.GapGain, p.HeadingGain, p.MaxSpeed
	// Robots start in a line behind the first waypoint, heading to the second.
	w0, w1 := p.Waypoints[0], p.Waypoints[1]
	dir := w1.Sub(w0)
	dir.Z = 0
	dir = dir.Scale(1 / dir.NormXY())
	yaw := math.Atan2(dir.Y, dir.X)
	for i := 0; i < p.Robots; i++ {
		pos := w0.Sub(dir.Scale(float64(i) * p.Gap))
		rb := &robot{v: groundbot.New(&r.gp, pos, yaw), beliefs: agent.NewBeliefs(p.Robots, p.Stale), wp: 1}
		rb.nextSend = sim.Time(sim.Duration(i) * p.Stagger)
		rb.bgStart = rb.nextSend
		rb.bgNext = rb.bgStart
		r.robots = append(r.robots, rb)
	}
	if p.LoadKbps > 0 {
		r.bgIvl = float64(p.BGSize*8) / (p.LoadKbps * 1000) * 1e9
	}
	r.met = metrics.New(p.Robots)
	if !ideal {
		b, err := impair.New(impair.Params{Latency: p.Latency, Jitter: p.Jitter, Loss: p.Loss, Rate: p.Rate,
			Queue: p.Queue, DeviceQueue: p.DeviceQueue}, seed, netsim.TraceFunc(r.trace))
		if err != nil {
			return nil, err
		}
		r.net = b
		nodes := make([]netsim.NodeInfo, p.Robots)
		for i := range nodes {
			nodes[i] = netsim.NodeInfo{ID: netsim.NodeID(i), Name: fmt.Sprintf("robot-%d", i), Pos: r.robots[i].v.Telemetry().Pos, Vehicle: true}
		}
		if err := b.Start(nodes); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *runner) trace(e *netsim.TraceEvent) {
	r.met.Trace(e)
	if r.traceCSV != nil {
		tracecsv.WriteTrace(r.traceCSV, e)
	}
}

func (r *runner) send(src int, kind netsim.Kind, seq uint32, size int, at sim.Time) {
	p := r.pool.Get(0)
	p.ID, p.Src, p.Dst, p.Kind, p.Seq, p.Size, p.TGen, p.TSend = r.nextID, netsim.NodeID(src), netsim.Broadcast, kind, seq, size, at, at
	r.nextID++
	r.net.Send(p)
}

// planEpoch hands the network every packet sent in [t0, t1).
func (r *runner) planEpoch(t0, t1 sim.Time) {
	for i, rb := range r.robots {
		if r.p.Policy == "periodic" {
			for rb.nextSend < t1 {
				r.send(i, netsim.KindState, rb.seq, agent.PlanarStateSize, rb.nextSend)
				rb.seq++
				rb.nextSend = rb.nextSend.Add(r.p.Period)
			}
		} else if t0 >= sim.Time(sim.Duration(i)*r.p.Stagger) {
			// Event-triggered: decided on the state at the epoch start.
			tel := rb.v.Telemetry()
			moved := tel.Pos.Dist(rb.lastPos) >= r.p.MoveThresh
			turned := math.Abs(geom.WrapAngle(tel.Yaw-rb.lastYaw))*180/math.Pi >= r.p.TurnThresh
			if !rb.sentOnce || moved || turned || t0.Sub(rb.lastSent) >= r.p.Heartbeat {
				r.send(i, netsim.KindState, rb.seq, agent.PlanarStateSize, t0)
				rb.seq++
				rb.sentOnce, rb.lastPos, rb.lastYaw, rb.lastSent = true, tel.Pos, tel.Yaw, t0
			}
		}
		if r.bgIvl > 0 {
			for rb.bgNext < t1 {
				r.send(i, netsim.KindBG, uint32(rb.bgK), r.p.BGSize, rb.bgNext)
				rb.bgK++
				rb.bgNext = rb.bgStart + sim.Time(math.Floor(float64(rb.bgK)*r.bgIvl))
			}
		}
	}
}

// advance runs the network to just before t1 and keeps its deliveries.
func (r *runner) advance(t1 sim.Time) error {
	ds, err := r.net.AdvanceTo(t1 - 1)
	if err != nil {
		return err
	}
	for _, d := range ds {
		r.pend = append(r.pend, rec{src: d.P.Src, dst: d.Dst, kind: d.P.Kind, seq: d.P.Seq, size: d.P.Size,
			tgen: d.P.TGen, tsend: d.P.TSend, at: d.At})
	}
	return nil
}

// run executes the run and returns its metrics.
func (r *runner) run() (*Metrics, error) {
	p := r.p
	end := sim.Time(p.Duration)
	epochTicks := int64(p.Epoch / p.Tick)
	if !r.ideal && p.Mode == "replay" {
		// The network runs first, over the whole duration.
		for t := sim.Time(0); t < end; t = t.Add(p.Epoch) {
			r.planEpoch(t, min(t.Add(p.Epoch), end))
			if err := r.advance(min(t.Add(p.Epoch), end)); err != nil {
				return nil, err
			}
		}
	}
	for k := int64(0); ; k++ {
		t := sim.Time(k * int64(p.Tick))
		if t >= end {
			break
		}
		if k%epochTicks == 0 && r.stop != nil && r.stop() {
			return nil, ErrStopped
		}
		if !r.ideal && p.Mode == "coupled" && k%epochTicks == 0 {
			e := min(t.Add(p.Epoch), end)
			r.planEpoch(t, e)
			if err := r.advance(e); err != nil {
				return nil, err
			}
		}
		r.step(k, t)
	}
	if r.net != nil {
		if err := r.net.Close(); err != nil {
			return nil, err
		}
		if r.pool.Live() != 0 {
			return nil, fmt.Errorf("internal error: %d packets leaked", r.pool.Live())
		}
	}
	return r.metrics(end), nil
}

func (r *runner) step(k int64, t sim.Time) {
	p := r.p
	for _, rb := range r.robots {
		s := rb.v.Phys.S
		rb.hist[k%histLen] = snap{s.X, s.Y, s.Theta, s.V, s.Omega}
	}
	// Deliveries that have arrived by now.
	for r.pHead < len(r.pend) && r.pend[r.pHead].at <= t {
		r.consume(&r.pend[r.pHead], k, t)
		r.pHead++
	}
	if r.pHead > 4096 && r.pHead*2 > len(r.pend) {
		n := copy(r.pend, r.pend[r.pHead:])
		r.pend, r.pHead = r.pend[:n], 0
	}
	// Controllers.
	for i, rb := range r.robots {
		tel := rb.v.Telemetry()
		if i == 0 {
			wp := p.Waypoints[rb.wp]
			if tel.Pos.Sub(wp).NormXY() < 0.2 {
				rb.wp = (rb.wp + 1) % len(p.Waypoints)
				wp = p.Waypoints[rb.wp]
				rb.v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: wp, Speed: p.Speed})
			} else if k == 0 {
				rb.v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: wp, Speed: p.Speed})
			}
			continue
		}
		var predPos geom.Vec3
		var predV float64
		if r.ideal {
			pt := r.robots[i-1].v.Telemetry()
			predPos, predV = pt.Pos, r.robots[i-1].v.Phys.S.V
		} else {
			b, ok := rb.beliefs.Get(t, netsim.NodeID(i-1))
			if !ok {
				r.stale++
				rb.v.Command(vehicle.Command{Kind: vehicle.CmdDrive})
				continue
			}
			predPos, predV = b.Pos, b.V
		}
		v, w := agent.FollowLaw(&r.law, tel.Pos, tel.Yaw, predPos, predV)
		rb.v.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: v, Omega: w})
	}
	// Physics.
	for _, rb := range r.robots {
		rb.v.Control(t, &r.ev)
		rb.v.Step(t, &r.ev)
	}
	r.ev.List = r.ev.List[:0]
	// Measurements, on the state at the end of the tick.
	tEnd := t.Add(p.Tick)
	if tEnd > sim.Time(p.Warmup) {
		for i := 1; i < len(r.robots); i++ {
			a, b := r.robots[i].v.Phys.S, r.robots[i-1].v.Phys.S
			e := math.Abs(math.Hypot(a.X-b.X, a.Y-b.Y) - p.Gap)
			r.gapSum += e
			r.gapN++
			r.gapMax = math.Max(r.gapMax, e)
		}
	}
	if int64(tEnd)%int64(p.Sample) == 0 {
		r.sample(tEnd)
	}
}

// consume applies one delivery at tick k: metrics, deliveries.csv, and for
// a state update the receiver rules on the sender's state at t_gen.
func (r *runner) consume(d *rec, k int64, t sim.Time) {
	r.pkt = netsim.Packet{Src: d.src, Dst: netsim.Broadcast, Kind: d.kind, Seq: d.seq, Size: d.size, TGen: d.tgen, TSend: d.tsend}
	dl := netsim.Delivery{P: &r.pkt, Dst: d.dst, At: d.at}
	r.met.Delivered(&dl, t)
	if c := r.delivCSV; c != nil {
		c.Int(int64(d.at)).Int(int64(t)).Int(int64(d.src)).Int(int64(d.dst)).Uint(uint64(d.seq)).
			Int(int64(d.tgen)).Int(int64(d.tsend)).Int(int64(d.size)).Str(d.kind.String()).Int(int64(d.at - d.tsend)).End()
	}
	if d.kind != netsim.KindState {
		return
	}
	r.stateLat = append(r.stateLat, int64(d.at-d.tsend))
	gi := int64(d.tgen) / int64(r.p.Tick)
	if k-gi >= histLen || gi > k {
		return // older than the history: its content is lost, and it would be stale anyway
	}
	h := r.robots[d.src].hist[gi%histLen]
	st := agent.State{ID: uint32(d.src), Seq: d.seq, TGen: d.tgen, Pos: geom.V(h.x, h.y, 0), Yaw: h.theta, V: h.v, Omega: h.omega}
	var buf [agent.PlanarStateSize]byte
	s, err := agent.DecodeState(st.AppendPlanar(buf[:0])) // the 56 bytes on the wire
	if err != nil {
		panic(err)
	}
	r.robots[d.dst].beliefs.Apply(t, d.src, s)
}

func (r *runner) sample(t sim.Time) {
	idx := int(t/sim.Time(r.p.Sample)) - 1
	for i, rb := range r.robots {
		s := rb.v.Phys.S
		pos := geom.V(s.X, s.Y, 0)
		if r.samples != nil {
			r.samples[i] = append(r.samples[i], pos)
		}
		if r.ref != nil && idx >= 0 && idx < len(r.ref.Positions[i]) {
			dv := pos.Dist(r.ref.Positions[i][idx])
			r.devSum += dv
			r.devN++
			r.devMax = math.Max(r.devMax, dv)
		}
		if c := r.robotsCSV; c != nil {
			gap := math.NaN()
			age := int64(-1)
			if i > 0 {
				a := r.robots[i-1].v.Phys.S
				gap = math.Hypot(s.X-a.X, s.Y-a.Y)
				if b, ok := rb.beliefs.Get(t, netsim.NodeID(i-1)); ok {
					age = int64(t - b.TGen)
				}
			}
			c.Int(int64(t)).Int(int64(i)).Float(s.X, 4).Float(s.Y, 4).Float(s.Theta, 5).Float(s.V, 4).Float(s.Omega, 4)
			if i > 0 {
				c.Float(gap, 4)
			} else {
				c.Str("")
			}
			c.Int(age).End()
		}
	}
}

func (r *runner) metrics(end sim.Time) *Metrics {
	m := &Metrics{StaleTicks: r.stale}
	if r.gapN > 0 {
		m.GapErrMeanM = r.gapSum / float64(r.gapN)
		m.GapErrMaxM = r.gapMax
	}
	if r.ref != nil {
		m.GapErrExcessM = m.GapErrMeanM - r.ref.GapErrMeanM
		if r.devN > 0 {
			m.TrajDevMeanM = r.devSum / float64(r.devN)
			m.TrajDevMaxM = r.devMax
		}
	}
	for _, rb := range r.robots {
		m.Duplicates += rb.beliefs.Counts[agent.Duplicate]
		m.OutOfOrder += rb.beliefs.Counts[agent.OutOfOrder]
	}
	if r.ideal {
		return m
	}
	s := r.met.Summary(end)
	st := s.ByKind["state"]
	ms := func(ns float64) float64 { return ns / 1e6 }
	m.LatencyMeanMs, m.LatencyP50Ms = ms(st.Latency.Mean), ms(float64(st.Latency.P50))
	m.LatencyP95Ms, m.LatencyMaxMs = ms(float64(st.Latency.P95)), ms(float64(st.Latency.Max))
	m.PDR, m.StateTx, m.StateRx = st.PDR, st.Tx, st.Rx
	m.DropRxError, m.DropQueue = st.Drops["rx_error"], st.Drops["queue"]
	if s.AoI != nil {
		m.AoIMeanS = s.AoI.MeanS
	}
	m.PacketsPerS, m.PayloadBytesPerS, m.IPBytesPerS = s.Total.Overhead.PacketsPerS, s.Total.Overhead.PayloadBytesPerS, s.Total.Overhead.IPBytesPerS
	return m
}

// RunReference runs the ideal-network reference for p's robots, duration
// and controller.
func RunReference(p Params) (*Reference, error) {
	r, err := newRunner(p, 0, true)
	if err != nil {
		return nil, err
	}
	r.samples = make([][]geom.Vec3, p.Robots)
	m, err := r.run()
	if err != nil {
		return nil, err
	}
	return &Reference{Robots: p.Robots, Duration: p.Duration, Sample: p.Sample, GapErrMeanM: m.GapErrMeanM, Positions: r.samples}, nil
}

// Run executes one run of p with the given seed. With dir set it writes
// the run directory (config.json, summary.json, and the files selected by
// out: trace.csv, deliveries.csv, robots.csv) atomically. ref, when not nil,
// gives the excess and deviation metrics. stop, when not nil, is polled
// every epoch.
func Run(p Params, seed uint64, dir string, out Outputs, ref *Reference, extra map[string]any, stop func() bool) (*Metrics, error) {
	r, err := newRunner(p, seed, false)
	if err != nil {
		return nil, err
	}
	r.ref, r.stop = ref, stop
	var d *record.Dir
	if dir != "" {
		if d, err = record.Create(dir); err != nil {
			return nil, err
		}
		open := func(on bool, name, header string) *record.CSV {
			if !on || err != nil {
				return nil
			}
			var c *record.CSV
			c, err = d.CSV(name, header)
			return c
		}
		r.traceCSV = open(out.Trace, "trace.csv", tracecsv.TraceHeader)
		r.delivCSV = open(out.Deliveries, "deliveries.csv", tracecsv.DeliveriesHeader)
		r.robotsCSV = open(out.Robots, "robots.csv", "t_ns,id,x,y,theta,v,omega,gap_m,belief_age_ns")
		if err != nil {
			d.Discard()
			return nil, err
		}
	}
	m, err := r.run()
	if err != nil {
		if d != nil {
			if errors.Is(err, ErrStopped) {
				d.Discard() // a stopped run is redone when the sweep resumes
				return nil, err
			}
			return nil, d.Fail(err)
		}
		return nil, err
	}
	if d == nil {
		return m, nil
	}
	cfg := map[string]any{"params": p, "seed": seed, "outputs": out}
	for k, v := range extra {
		cfg[k] = v
	}
	if err := d.JSON("config.json", cfg); err != nil {
		return nil, d.Fail(err)
	}
	sum := map[string]any{"seed": seed, "metrics": m}
	for k, v := range extra {
		sum[k] = v
	}
	if err := d.JSON("summary.json", sum); err != nil {
		return nil, d.Fail(err)
	}
	if err := d.Commit(); err != nil {
		return nil, err
	}
	return m, nil
}
