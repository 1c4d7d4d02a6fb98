package engine

import (
	"fmt"
	"math"
	"slices"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// worldCheck watches the vehicles at the sample period: the minimum
// separation between any two (exact, by a sweep over x-sorted positions),
// contacts (closer than the sum of their radii), obstacle entries and
// bounds exits. Each is an event when it starts.
type worldCheck struct {
	obstacles []scenario.Obstacle
	bounds    *geom.Box
	radius    []float64
	maxR      float64
	inObs     []int // obstacle the vehicle is inside, or -1
	outside   []bool
	order     []int
	contact   map[[2]int]bool
	next      map[[2]int]bool
	rank      []int // position of each vehicle in order
	// Strips: vehicles sorted by the strip of width h their x lies in,
	// then by y (sorder, with each one's strip in strip), so that every
	// pair closer than h is found among neighbours (stripPairs); h is 0
	// until a sweep has sized it.
	h      float64
	sorder []int
	strip  []float64
	best   closest

	MinSep       float64
	MinSepT      sim.Time
	MinSepPair   [2]int
	Collisions   int
	ObstacleHits int
	BoundsExits  int
	maxSpeed     []float64
	start        []geom.Vec3
	turnDeg      []float64 // heading change accumulated between checks
	lastYaw      []float64
}

func newWorldCheck(w scenario.World, veh []vehicle.Vehicle) worldCheck {
	c := worldCheck{obstacles: w.Obstacles, bounds: w.Bounds, MinSep: math.Inf(1),
		contact: map[[2]int]bool{}, next: map[[2]int]bool{}}
	n := len(veh)
	c.radius = make([]float64, n)
	c.inObs = make([]int, n)
	c.outside = make([]bool, n)
	c.order = make([]int, n)
	c.rank = make([]int, n)
	c.sorder = make([]int, n)
	c.strip = make([]float64, n)
	c.maxSpeed = make([]float64, n)
	c.start = make([]geom.Vec3, n)
	c.turnDeg = make([]float64, n)
	c.lastYaw = make([]float64, n)
	for i, v := range veh {
		m := v.Motion()
		c.start[i] = m.Pos
		c.lastYaw[i] = m.Yaw
		c.radius[i] = v.Radius()
		c.maxR = math.Max(c.maxR, c.radius[i])
		c.inObs[i] = -1
		c.order[i] = i
		c.sorder[i] = i
	}
	return c
}

type emitFunc func(t sim.Time, node netsim.NodeID, source, name, detail string)

func (c *worldCheck) sample(t sim.Time, mo []vehicle.Motion, emit emitFunc) {
	n := len(mo)
	for i := range mo {
		p := mo[i].Pos
		c.maxSpeed[i] = math.Max(c.maxSpeed[i], mo[i].Vel.Norm())
		c.turnDeg[i] += math.Abs(geom.WrapAngle(mo[i].Yaw-c.lastYaw[i])) * 180 / math.Pi
		c.lastYaw[i] = mo[i].Yaw
		if len(c.obstacles) > 0 {
			in := -1
			for k, o := range c.obstacles {
				if (geom.Box{Min: o.Min, Max: o.Max}).Dist(p) < c.radius[i] {
					in = k
					break
				}
			}
			if in >= 0 && c.inObs[i] != in {
				c.ObstacleHits++
				emit(t, netsim.NodeID(i), "world", "obstacle_hit", c.obstacles[in].Name)
			}
			c.inObs[i] = in
		}
		if c.bounds != nil {
			out := !c.bounds.Contains(p)
			if out && !c.outside[i] {
				c.BoundsExits++
				emit(t, netsim.NodeID(i), "world", "out_of_bounds", fmt.Sprintf("%.2f %.2f %.2f", p.X, p.Y, p.Z))
			}
			c.outside[i] = out
		}
	}
	if n < 2 {
		return
	}
	// Insertion sort by x: positions change little between samples, so this
	// is close to linear. The order (stable, so it depends on the samples
	// before) breaks ties between equally distant pairs, as a sweep over
	// it would find them first.
	o := c.order
	for i := 1; i < n; i++ {
		k := o[i]
		x := mo[k].Pos.X
		j := i - 1
		for j >= 0 && mo[o[j]].Pos.X > x {
			o[j+1] = o[j]
			j--
		}
		o[j+1] = k
	}
	for i, k := range o {
		c.rank[k] = i
	}
	clear(c.next)
	c.best = closest{d: math.Inf(1)}
	if c.h > 0 {
		c.stripPairs(mo)
	}
	if !(c.best.d < c.h) {
		// Nothing closer than the strips' width (or no strips yet): sweep
		// over every pair by x, and size the strips for the next samples.
		c.sweepPairs(mo)
		c.h = 0
		if !math.IsInf(c.best.d, 1) {
			c.h = max(2*c.maxR, 1.5*c.best.d)
		}
	}
	best, bestPair := c.best.d, c.best.pair
	if best < c.MinSep {
		c.MinSep, c.MinSepT, c.MinSepPair = best, t, bestPair
	}
	if len(c.next) > 0 {
		// Report new contacts in pair order.
		keys := make([][2]int, 0, len(c.next))
		for k := range c.next {
			if !c.contact[k] {
				keys = append(keys, k)
			}
		}
		sortPairs(keys)
		for _, k := range keys {
			c.Collisions++
			emit(t, netsim.NodeID(k[0]), "world", "collision", fmt.Sprintf("with %d", k[1]))
		}
	}
	c.contact, c.next = c.next, c.contact
}

// closest is the closest pair found so far: its distance, the vehicles,
// and their positions in the x order (lo < hi), which break ties.
type closest struct {
	d      float64
	pair   [2]int
	lo, hi int
}

// pair measures vehicles a and b: a contact when closer than their radii,
// and the closest pair so far when closer than it, or as close and
// earlier in the x order.
func (c *worldCheck) pair(mo []vehicle.Motion, a, b int) {
	d := mo[a].Pos.Dist(mo[b].Pos)
	if d < c.radius[a]+c.radius[b] {
		c.next[[2]int{min(a, b), max(a, b)}] = true
	}
	if d > c.best.d {
		return
	}
	lo, hi := min(c.rank[a], c.rank[b]), max(c.rank[a], c.rank[b])
	if d < c.best.d || lo < c.best.lo || lo == c.best.lo && hi < c.best.hi {
		c.best = closest{d: d, pair: [2]int{min(a, b), max(a, b)}, lo: lo, hi: hi}
	}
}

// sweepPairs measures every pair that could be the closest or a contact,
// by a sweep over the x order.
func (c *worldCheck) sweepPairs(mo []vehicle.Motion) {
	o := c.order
	for i := range o {
		pa := mo[o[i]].Pos
		for j := i + 1; j < len(o); j++ {
			dx := mo[o[j]].Pos.X - pa.X
			if dx >= c.best.d && dx >= 2*c.maxR {
				break
			}
			c.pair(mo, o[i], o[j])
		}
	}
}

// stripPairs measures every pair closer than h: vehicles in the same or
// neighbouring strips of width h along x, less than h apart along y. The
// vehicles stay sorted by strip and y (insertion sort: they move little
// between samples), and a strip is compared with the next one by a
// pointer that only moves forward.
func (c *worldCheck) stripPairs(mo []vehicle.Motion) {
	h, o, st := c.h, c.sorder, c.strip
	for _, k := range o {
		st[k] = math.Floor(mo[k].Pos.X / h)
	}
	less := func(a, b int) bool {
		return st[a] < st[b] || st[a] == st[b] && mo[a].Pos.Y < mo[b].Pos.Y
	}
	moves := 0
	for i := 1; i < len(o); i++ {
		k := o[i]
		j := i - 1
		for j >= 0 && less(k, o[j]) {
			o[j+1] = o[j]
			j--
		}
		o[j+1] = k
		if moves += i - 1 - j; moves > 16*len(o) {
			// Far from sorted (the strips moved): sort afresh.
			slices.SortFunc(o, func(a, b int) int {
				if less(a, b) {
					return -1
				}
				if less(b, a) {
					return 1
				}
				return 0
			})
			break
		}
	}
	for lo := 0; lo < len(o); {
		s := st[o[lo]]
		hi := lo + 1
		for hi < len(o) && st[o[hi]] == s {
			hi++
		}
		end := hi // the next strip's run, if it is the neighbour
		if hi < len(o) && st[o[hi]] == s+1 {
			for end < len(o) && st[o[end]] == s+1 {
				end++
			}
		}
		p := hi
		for i := lo; i < hi; i++ {
			a := o[i]
			y := mo[a].Pos.Y
			for j := i + 1; j < hi && mo[o[j]].Pos.Y-y < h; j++ {
				c.pair(mo, a, o[j])
			}
			for p < end && mo[o[p]].Pos.Y <= y-h {
				p++
			}
			for j := p; j < end && mo[o[j]].Pos.Y-y < h; j++ {
				c.pair(mo, a, o[j])
			}
		}
		lo = hi
	}
}

func sortPairs(ps [][2]int) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && (ps[j][0] < ps[j-1][0] || (ps[j][0] == ps[j-1][0] && ps[j][1] < ps[j-1][1])); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
