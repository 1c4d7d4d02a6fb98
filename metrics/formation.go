package metrics

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
)

// FormationParams configure the formation measure: how well a vehicle
// group keeps a formation, from the vehicles' true states.
type FormationParams struct {
	// Group names the vehicle group (index 0 is the leader).
	Group string `yaml:"group" json:"group"`
	// Mode is leader (every follower's distance from its slot, leader
	// position + offset), flock (every member's |nearest-neighbour
	// distance - spacing|) or chain (|distance between members k-1 and k -
	// spacing| for every follower k, with the extremes of those distances).
	Mode string `yaml:"mode" json:"mode"`
	// Warmup is when the formation error starts to count; the closest
	// approach counts from the start.
	Warmup sim.Duration `yaml:"warmup" json:"warmup"`
	// Period is how often the measure samples the group.
	Period sim.Duration `yaml:"period" json:"period"`
	// Tolerance is the error below which the formation counts as
	// settled (settled_s), m.
	Tolerance float64 `yaml:"tolerance" json:"tolerance"`
}

// DefaultFormationParams returns a leader-follower measure counted after
// a 10 s warm-up, sampled every 10 ms, settled within 0.5 m.
func DefaultFormationParams() FormationParams {
	return FormationParams{Mode: "leader", Warmup: 10 * sim.Second, Period: 10 * sim.Millisecond, Tolerance: 0.5}
}

// Validate checks the parameters.
func (p *FormationParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Group == "" {
		bad["group"] = "missing: the vehicle group that flies the formation"
	}
	if p.Mode != "leader" && p.Mode != "flock" && p.Mode != "chain" {
		bad["mode"] = fmt.Sprintf("must be leader, flock or chain, got %q", p.Mode)
	}
	if p.Warmup < 0 {
		bad["warmup"] = fmt.Sprintf("must be >= 0, got %v", p.Warmup)
	}
	if p.Period <= 0 {
		bad["period"] = fmt.Sprintf("must be positive, got %v", p.Period)
	}
	if !(p.Tolerance > 0) || math.IsInf(p.Tolerance, 0) {
		bad["tolerance"] = fmt.Sprintf("must be > 0 m, got %v", p.Tolerance)
	}
	return bad
}

// Formation accumulates the formation measure. At every sample the
// formation error is the mean over the group of each member's error:
// in leader mode a follower's distance from its slot (the leader's true
// position plus the follower's offset; the leader has none), in flock mode
// |distance to the nearest other member - spacing| for every member, in
// chain mode |distance to the member before it - spacing| for every
// follower. The measure reports the mean of the error over the samples
// after the warm-up, its largest sample, its last, when it last exceeded
// the tolerance, and the closest approach of any two members over the run;
// in chain mode also the smallest and largest distance between
// consecutive members over the run.
type Formation struct {
	p        FormationParams
	spacing  float64
	slots    []geom.Vec3
	n        int
	sum      float64
	cnt      int64
	maxErr   float64
	last     float64
	lastBad  sim.Time // the last sample whose error exceeded the tolerance
	anyBad   bool
	closest  float64
	closeT   sim.Time
	pair     [2]int
	samples  int
	nearest  []float64 // flock mode: scratch
	lastTime sim.Time
	// Chain mode: the extremes of the distance between consecutive
	// members over the run; the sum and count of the behind cosines after
	// the warm-up; the positions at the sample before.
	spMin, spMax float64
	behind       float64
	behindN      int64
	prev         []geom.Vec3
}

// FormationResult is the measure's line in summary.json.
type FormationResult struct {
	Group    string `json:"group"`
	Mode     string `json:"mode"`
	Vehicles int    `json:"vehicles"`
	// ErrMeanM is the formation error averaged over the samples after
	// the warm-up; ErrMaxM its largest sample, ErrFinalM its last.
	ErrMeanM  float64 `json:"formation_err_mean_m"`
	ErrMaxM   float64 `json:"formation_err_max_m"`
	ErrFinalM float64 `json:"formation_err_final_m"`
	// SettledS is the time from which the error stayed within the
	// tolerance to the end (0 if it always did), or -1 if it ends above.
	SettledS   float64 `json:"settled_s"`
	ToleranceM float64 `json:"tolerance_m"`
	// ClosestM is the closest approach of any two members over the run,
	// at ClosestTNs, between group indices ClosestPair.
	ClosestM    float64  `json:"closest_m"`
	ClosestTNs  sim.Time `json:"closest_t_ns"`
	ClosestPair [2]int   `json:"closest_pair"`
	Samples     int      `json:"samples"`
	// Chain mode only: the smallest and largest distance between
	// consecutive members (k-1, k) over the run, and the larger of their
	// departures from the spacing.
	SpacingMinM    *float64 `json:"spacing_min_m,omitempty"`
	SpacingMaxM    *float64 `json:"spacing_max_m,omitempty"`
	SpacingErrMaxM *float64 `json:"spacing_err_max_m,omitempty"`
	// BehindMean (chain mode) is the mean, after the warm-up, over
	// followers whose predecessor moves at 0.5 m/s or more, of the cosine
	// of the angle between the predecessor's direction of travel and the
	// line from the follower to it: 1 when every follower flies straight
	// behind its predecessor, 0 abreast, -1 ahead.
	BehindMean *float64 `json:"behind_mean,omitempty"`
}

// NewFormation returns the measure for a group of n vehicles: in leader
// mode slots[k] is follower k's offset from the leader (slots[0] is
// ignored); in flock mode spacing is the desired neighbour distance.
func NewFormation(p FormationParams, n int, slots []geom.Vec3, spacing float64) *Formation {
	m := &Formation{p: p, n: n, slots: slots, spacing: spacing, closest: math.Inf(1), nearest: make([]float64, n),
		spMin: math.Inf(1), spMax: math.Inf(-1)}
	if p.Mode == "chain" {
		m.prev = make([]geom.Vec3, n)
	}
	return m
}

// Params returns the measure's parameters.
func (m *Formation) Params() FormationParams { return m.p }

// Observe takes the group's true positions at time t, in index order; it
// samples them every Period.
func (m *Formation) Observe(t sim.Time, pos []geom.Vec3) {
	if t <= 0 || int64(t)%int64(m.p.Period) != 0 || len(pos) < 2 {
		return
	}
	m.samples++
	m.lastTime = t
	for i := range m.nearest {
		m.nearest[i] = math.Inf(1)
	}
	for i := range pos {
		for j := i + 1; j < len(pos); j++ {
			d := pos[i].Dist(pos[j])
			if d < m.closest {
				m.closest, m.closeT, m.pair = d, t, [2]int{i, j}
			}
			m.nearest[i] = math.Min(m.nearest[i], d)
			m.nearest[j] = math.Min(m.nearest[j], d)
		}
	}
	var e float64
	switch m.p.Mode {
	case "flock":
		for i := range pos {
			e += math.Abs(m.nearest[i] - m.spacing)
		}
		e /= float64(len(pos))
	case "chain":
		minStep := behindSpeed * m.p.Period.Seconds()
		for k := 1; k < len(pos); k++ {
			d := pos[k].Dist(pos[k-1])
			m.spMin, m.spMax = math.Min(m.spMin, d), math.Max(m.spMax, d)
			e += math.Abs(d - m.spacing)
			if m.samples > 1 && k-1 < len(m.prev) && t > sim.Time(m.p.Warmup) {
				step := pos[k-1].Sub(m.prev[k-1])
				if sn := step.Norm(); sn >= minStep && d > 0 {
					m.behind += step.Dot(pos[k-1].Sub(pos[k])) / (sn * d)
					m.behindN++
				}
			}
		}
		e /= float64(len(pos) - 1)
		copy(m.prev, pos)
	default:
		for k := 1; k < len(pos); k++ {
			e += pos[k].Dist(pos[0].Add(m.slots[k]))
		}
		e /= float64(len(pos) - 1)
	}
	m.last = e
	if e > m.p.Tolerance {
		m.lastBad, m.anyBad = t, true
	}
	if t > sim.Time(m.p.Warmup) {
		m.sum += e
		m.cnt++
		m.maxErr = math.Max(m.maxErr, e)
	}
}

// Result returns the figures so far.
func (m *Formation) Result() FormationResult {
	r := FormationResult{Group: m.p.Group, Mode: m.p.Mode, Vehicles: m.n, ErrFinalM: round4(m.last),
		ToleranceM: m.p.Tolerance, ClosestTNs: m.closeT, ClosestPair: m.pair, Samples: m.samples}
	if m.cnt > 0 {
		r.ErrMeanM, r.ErrMaxM = round4(m.sum/float64(m.cnt)), round4(m.maxErr)
	}
	if !math.IsInf(m.closest, 1) {
		r.ClosestM = round4(m.closest)
	}
	if m.p.Mode == "chain" && !math.IsInf(m.spMin, 1) {
		lo, hi := round4(m.spMin), round4(m.spMax)
		dev := round4(math.Max(m.spacing-m.spMin, m.spMax-m.spacing))
		r.SpacingMinM, r.SpacingMaxM, r.SpacingErrMaxM = &lo, &hi, &dev
		if m.behindN > 0 {
			b := round4(m.behind / float64(m.behindN))
			r.BehindMean = &b
		}
	}
	switch {
	case !m.anyBad:
	case m.lastBad == m.lastTime:
		r.SettledS = -1
	default:
		r.SettledS = (m.lastBad + sim.Time(m.p.Period)).Sub(0).Seconds()
	}
	return r
}

// behindSpeed is the speed, m/s, from which a predecessor's direction of
// travel counts for the chain measure's behind figure.
const behindSpeed = 0.5

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
