package metrics

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
)

// PlatoonParams configure the platoon measure (docs/scenario.md,
// "Platoon"): how well a vehicle group keeps its gaps, from the vehicles'
// true states.
type PlatoonParams struct {
	// Group names the vehicle group; its vehicles form the platoon in
	// index order (index 0 leads).
	Group string `yaml:"group" json:"group"`
	// Gap is the desired distance between neighbours, m.
	Gap float64 `yaml:"gap" json:"gap"`
	// Warmup is when the gap error starts to count.
	Warmup sim.Duration `yaml:"warmup" json:"warmup"`
	// Sample is the period of the trajectory samples (robots.csv and
	// the comparison with a reference run).
	Sample sim.Duration `yaml:"sample" json:"sample"`
	// File names the per-sample CSV of the robots' planar states
	// (t_ns,id,x,y,theta,v,omega,gap_m); "" writes none.
	File string `yaml:"file" json:"file"`
}

// DefaultPlatoonParams returns the platoon experiment's setup: 1 m gaps,
// counted after a 5 s warm-up, sampled every 100 ms into robots.csv.
func DefaultPlatoonParams() PlatoonParams {
	return PlatoonParams{Gap: 1, Warmup: 5 * sim.Second, Sample: 100 * sim.Millisecond, File: "robots.csv"}
}

// Validate checks the parameters.
func (p *PlatoonParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Group == "" {
		bad["group"] = "missing: the vehicle group that forms the platoon"
	}
	if !(p.Gap > 0) || math.IsInf(p.Gap, 0) {
		bad["gap"] = fmt.Sprintf("must be > 0 m, got %v", p.Gap)
	}
	if p.Warmup < 0 {
		bad["warmup"] = fmt.Sprintf("must be >= 0, got %v", p.Warmup)
	}
	if p.Sample <= 0 {
		bad["sample"] = fmt.Sprintf("must be positive, got %v", p.Sample)
	}
	return bad
}

// Planar is a ground vehicle's planar state.
type Planar struct {
	X, Y, Theta float64 // m, m, rad
	V, Omega    float64 // signed forward speed m/s, turn rate rad/s
}

// Platoon accumulates the platoon measure: the gap error |dist - gap|
// between every follower and its predecessor at every tick after the
// warm-up, and the trajectory samples.
type Platoon struct {
	p      PlatoonParams
	gapSum float64
	gapN   int64
	gapMax float64
	track  Track
}

// Track is a platoon's trajectory, sampled: Positions[i][k] is vehicle i
// at time (k+1)*Sample. It is written exactly (shortest round-trip
// decimals), so that runs can be compared after the fact.
type Track struct {
	Sample    sim.Duration  `json:"sample"`
	Positions [][]geom.Vec3 `json:"positions"`
}

// PlatoonResult is the measure's line in summary.json.
type PlatoonResult struct {
	Group       string  `json:"group"`
	Vehicles    int     `json:"vehicles"`
	GapErrMeanM float64 `json:"gap_err_mean_m"` // mean |dist - gap| over followers after the warm-up
	GapErrMaxM  float64 `json:"gap_err_max_m"`
	Samples     int     `json:"samples"`
}

// NewPlatoon returns the measure for a platoon of n vehicles.
func NewPlatoon(p PlatoonParams, n int) *Platoon {
	return &Platoon{p: p, track: Track{Sample: p.Sample, Positions: make([][]geom.Vec3, n)}}
}

// Params returns the measure's parameters.
func (m *Platoon) Params() PlatoonParams { return m.p }

// Observe takes the vehicles' positions at time t (t > 0: the state at
// the end of the tick before t), in platoon order, for the gap error. It
// reports whether t is a sample time, when Sample must follow.
func (m *Platoon) Observe(t sim.Time, pos []geom.Vec3) bool {
	if t > sim.Time(m.p.Warmup) {
		for i := 1; i < len(pos); i++ {
			a, b := &pos[i], &pos[i-1]
			e := math.Abs(math.Hypot(a.X-b.X, a.Y-b.Y) - m.p.Gap)
			m.gapSum += e
			m.gapN++
			m.gapMax = math.Max(m.gapMax, e)
		}
	}
	return t > 0 && int64(t)%int64(m.p.Sample) == 0
}

// Sample records the vehicles' planar states at a sample time.
func (m *Platoon) Sample(s []Planar) {
	for i := range s {
		m.track.Positions[i] = append(m.track.Positions[i], geom.V(s[i].X, s[i].Y, 0))
	}
}

// Result returns the figures so far.
func (m *Platoon) Result() PlatoonResult {
	r := PlatoonResult{Group: m.p.Group, Vehicles: len(m.track.Positions)}
	if m.gapN > 0 {
		r.GapErrMeanM = m.gapSum / float64(m.gapN)
		r.GapErrMaxM = m.gapMax
	}
	if len(m.track.Positions) > 0 {
		r.Samples = len(m.track.Positions[0])
	}
	return r
}

// Track returns the sampled trajectory.
func (m *Platoon) Track() *Track { return &m.track }

// Deviation compares a run's trajectory with a reference run's: the mean
// and maximum distance between each vehicle's sampled positions and the
// reference's at the same times, over the samples both have. ok is false
// when the two cannot be compared (other vehicle counts or sample periods).
func Deviation(run, ref *Track) (mean, maxDev float64, ok bool) {
	if run.Sample != ref.Sample || len(run.Positions) != len(ref.Positions) {
		return 0, 0, false
	}
	var sum float64
	var n int64
	samples := 0
	for i := range run.Positions {
		samples = max(samples, len(run.Positions[i]))
	}
	for k := 0; k < samples; k++ {
		for i := range run.Positions {
			if k >= len(run.Positions[i]) || k >= len(ref.Positions[i]) {
				continue
			}
			d := run.Positions[i][k].Dist(ref.Positions[i][k])
			sum += d
			n++
			maxDev = math.Max(maxDev, d)
		}
	}
	if n == 0 {
		return 0, 0, true
	}
	return sum / float64(n), maxDev, true
}
