package engine

import (
	"fmt"
	"math"

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
	// is close to linear.
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
	best := math.Inf(1)
	bestPair := [2]int{}
	clear(c.next)
	for i := 0; i < n; i++ {
		a := o[i]
		pa := mo[a].Pos
		for j := i + 1; j < n; j++ {
			b := o[j]
			pb := mo[b].Pos
			dx := pb.X - pa.X
			if dx >= best && dx >= 2*c.maxR {
				break
			}
			d := pa.Dist(pb)
			if d < best {
				best = d
				bestPair = [2]int{min(a, b), max(a, b)}
			}
			if d < c.radius[a]+c.radius[b] {
				key := [2]int{min(a, b), max(a, b)}
				c.next[key] = true
			}
		}
	}
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

func sortPairs(ps [][2]int) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && (ps[j][0] < ps[j-1][0] || (ps[j][0] == ps[j-1][0] && ps[j][1] < ps[j-1][1])); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
