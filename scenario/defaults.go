package scenario

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"skyloop/geom"
	"skyloop/sim"
)

// Defaults returns a scenario holding every top-level default. This is the
// one place where they are set; component defaults (vehicle kinds,
// behaviours, network backends) live with each component and are listed by
// `skyloop validate --effective`, which prints a scenario with every default
// filled in.
//
//	seed: 1                 run seed; every random stream derives from it
//	duration: 60s           simulated time
//	tick: 1ms               kernel tick; every period must be a multiple
//	workers: 0              goroutines stepping vehicles; 0 = automatic (1 unless vehicle work is heavy)
//	world: {check_period: 10ms}
//	network: {backend: ideal, position_period: 10ms}
//	outputs: {trace: true, deliveries: true, vehicles: true, events: true, plots: true, sample_period: 100ms}
func Defaults() *Scenario {
	return &Scenario{
		Seed:     1,
		Duration: 60 * sim.Second,
		Tick:     sim.Millisecond,
		// The origin is PX4 SITL's default home (Zurich, Irchel park).
		World: World{CheckPeriod: 10 * sim.Millisecond, Origin: geom.Geodetic{Lat: 47.397742, Lon: 8.545594, Alt: 488}},
		Outputs: Outputs{
			Trace: true, Deliveries: true, Vehicles: true, Events: true, Plots: true, Report: true,
			SamplePeriod: 100 * sim.Millisecond,
		},
	}
}

// MaxVehicles is the largest vehicle count a scenario may ask for, in one
// group or in all: the most points a spawn layout places.
const MaxVehicles = geom.MaxPoints

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// check validates the generic fields; component parameters are checked by
// the engine.
func (sc *Scenario) check() {
	if !nameRE.MatchString(sc.Name) {
		sc.Errorf("name", "must start with a letter or digit and use only letters, digits, '.', '_' and '-' (it names the run directory), got %q", sc.Name)
	}
	if sc.Duration <= 0 {
		sc.Errorf("duration", "must be positive, got %v", sc.Duration)
	}
	if sc.Tick <= 0 {
		sc.Errorf("tick", "must be positive, got %v", sc.Tick)
	} else {
		if sc.Duration > 0 && sc.Duration%sc.Tick != 0 {
			sc.Errorf("duration", "%v is not a whole number of ticks of %v", sc.Duration, sc.Tick)
		}
		if sc.Outputs.SamplePeriod <= 0 || sc.Outputs.SamplePeriod%sc.Tick != 0 {
			how := ""
			if !sc.IsSet("outputs.sample_period") {
				how = " (the default; set outputs.sample_period to a multiple of the tick)"
			}
			sc.Errorf("outputs.sample_period", "must be a positive multiple of the tick %v, got %v%s", sc.Tick, sc.Outputs.SamplePeriod, how)
		}
	}
	if err := sc.Outputs.Format.Check(); err != nil {
		sc.Errorf("outputs.format", "%v", err)
	}
	if !(sc.Realtime == 0 || sc.Realtime >= 0.01 && sc.Realtime <= 1000) { // runner.MinFactor, MaxFactor
		sc.Errorf("realtime", "must be a real-time factor from 0.01 to 1000 (or 0 = as fast as possible), got %v", sc.Realtime)
	}
	switch sc.Isolation {
	case "", "none":
		if len(sc.Processes) > 0 {
			sc.Errorf("processes", "processes run inside the vehicles' namespaces: set isolation: netns")
		}
	case "netns":
		if sc.Realtime == 0 {
			sc.Errorf("isolation", "isolation: netns runs real programs, which live in wall-clock time: set realtime (e.g. 1)")
		}
	default:
		sc.Errorf("isolation", "must be none or netns, got %q", sc.Isolation)
	}
	procNames := map[string]int{}
	for i := range sc.Processes {
		p := &sc.Processes[i]
		path := fmt.Sprintf("processes[%d]", i)
		if p.Restart == "" {
			p.Restart = "none"
		}
		if p.StopTimeout == 0 {
			p.StopTimeout = 2 * sim.Second
		}
		if !nameRE.MatchString(p.Name) {
			sc.Errorf(path+".name", "must be a plain name (letters, digits, '.', '_', '-'), got %q", p.Name)
		}
		if strings.TrimSpace(p.Command) == "" {
			sc.Errorf(path+".command", "must not be empty")
		}
		if bad := unknownPlaceholders(p.Command); bad != "" {
			sc.Errorf(path+".command", "unknown placeholder %s: the template knows {i}, {sysid}, {tcp_port}, {udp_port}, {ns}, {ip}, {host_ip} and {name}", bad)
		}
		if p.Restart != "none" && p.Restart != "on-failure" {
			sc.Errorf(path+".restart", "must be none or on-failure, got %q", p.Restart)
		}
		if p.StopTimeout < 0 {
			sc.Errorf(path+".stop_timeout", "must be >= 0, got %v", p.StopTimeout)
		}
		if j, dup := procNames[p.Name]; dup {
			sc.Errorf(path+".name", "name collision: processes[%d] is also called %q", j, p.Name)
		} else {
			procNames[p.Name] = i
		}
	}
	if sc.Workers < 0 {
		sc.Errorf("workers", "must be >= 0 (0 = automatic), got %d", sc.Workers)
	}
	if w := sc.World.Bounds; w != nil {
		if w.Min.X >= w.Max.X || w.Min.Y >= w.Max.Y || w.Min.Z >= w.Max.Z {
			sc.Errorf("world.bounds", "min must be below max on every axis, got min %v max %v", w.Min, w.Max)
		}
	}
	if !sc.World.Origin.Valid() {
		sc.Errorf("world.origin", "latitude must be in [-90, 90], longitude in [-180, 180] and altitude finite, got %+v", sc.World.Origin)
	}
	if c := sc.Coverage; c != nil {
		sc.checkCoverage(c)
	}
	for i, o := range sc.World.Obstacles {
		p := fmt.Sprintf("world.obstacles[%d]", i)
		if o.Min.X > o.Max.X || o.Min.Y > o.Max.Y || o.Min.Z > o.Max.Z {
			sc.Errorf(p, "min must not exceed max on any axis, got min %v max %v", o.Min, o.Max)
		}
	}
	names := map[string]string{}
	claim := func(name, path string) {
		if name == "" {
			sc.Errorf(path, "missing: every group and node needs a name")
			return
		}
		if !nameRE.MatchString(name) {
			sc.Errorf(path, "%q: use only letters, digits, '.', '_' and '-'", name)
			return
		}
		if prev, dup := names[name]; dup {
			sc.Errorf(path, "%q is already used by %s", name, prev)
			return
		}
		names[name] = path
	}
	if len(sc.Vehicles) == 0 {
		sc.Errorf("vehicles", "a scenario needs at least one vehicle group")
	}
	total := 0
	for i := range sc.Vehicles {
		g := &sc.Vehicles[i]
		p := fmt.Sprintf("vehicles[%d]", i)
		claim(g.Name, p+".name")
		if g.Kind == "" {
			sc.Errorf(p+".kind", "missing: one of pointmass, groundbot, multirotor")
		}
		if g.Count < 1 {
			sc.Errorf(p+".count", "must be >= 1, got %d", g.Count)
			continue
		}
		if g.Count > MaxVehicles {
			sc.Errorf(p+".count", "%d vehicles: at most %d", g.Count, MaxVehicles)
			continue
		}
		total += g.Count
		if total > MaxVehicles {
			continue // reported below; layouts beyond the limit are not checked
		}
		for k, msg := range g.Spawn.Check(g.Count) {
			sc.Errorf(p+".spawn."+k, "%s", msg)
		}
	}
	if total > MaxVehicles {
		sc.Errorf("vehicles", "%d vehicles in total: at most %d", total, MaxVehicles)
	}
	groups := make(map[string]*Group, len(sc.Vehicles))
	for i := range sc.Vehicles {
		if g := &sc.Vehicles[i]; groups[g.Name] == nil || g.Count > groups[g.Name].Count {
			groups[g.Name] = g
		}
	}
	for i := range sc.Nodes {
		p := fmt.Sprintf("nodes[%d].name", i)
		if clash := vehicleNamed(groups, sc.Nodes[i].Name); clash != "" {
			sc.Errorf(p, "%q is the name of vehicle %s; pick another", sc.Nodes[i].Name, clash)
			continue
		}
		claim(sc.Nodes[i].Name, p)
	}
}

// vehicleNamed returns the name of the vehicle (group[index]) called name,
// or "". Vehicle names are <group>-<index>; groups maps group names to the
// largest group of each name.
func vehicleNamed(groups map[string]*Group, name string) string {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return ""
	}
	g, rest := groups[name[:i]], name[i+1:]
	if g == nil {
		return ""
	}
	if k, err := strconv.Atoi(rest); err == nil && k >= 0 && k < g.Count && strconv.Itoa(k) == rest {
		return g.Name + "[" + rest + "]"
	}
	return ""
}

// unknownPlaceholders returns the first {...} in a process command template
// that is not a known field, or "".
func unknownPlaceholders(cmd string) string {
	known := map[string]bool{"{i}": true, "{sysid}": true, "{tcp_port}": true, "{udp_port}": true, "{ns}": true, "{ip}": true,
		"{host_ip}": true, "{name}": true}
	for {
		i := strings.IndexByte(cmd, '{')
		if i < 0 {
			return ""
		}
		j := strings.IndexByte(cmd[i:], '}')
		if j < 0 {
			return cmd[i:]
		}
		if !known[cmd[i:i+j+1]] {
			return cmd[i : i+j+1]
		}
		cmd = cmd[i+j+1:]
	}
}

// checkCoverage checks the coverage area and puts its obstacle cells in
// the world when they have a height.
func (sc *Scenario) checkCoverage(c *CoverageArea) {
	ok := true
	if !(c.Cell > 0) || math.IsInf(c.Cell, 0) {
		sc.Errorf("coverage.cell", "must be a positive size in m, got %v", c.Cell)
		return
	}
	var n [2]int
	for i, axis := range []string{"x", "y"} {
		f := c.Area[i] / c.Cell
		if !(f >= 1) || f != math.Trunc(f) || f > 10000 {
			sc.Errorf("coverage.area", "%s size %v m must be a positive whole multiple of the %v m cell (at most 10000 cells)", axis, c.Area[i], c.Cell)
			ok = false
		}
		n[i] = int(f)
	}
	if math.IsNaN(c.Origin[0]) || math.IsNaN(c.Origin[1]) || math.IsInf(c.Origin[0], 0) || math.IsInf(c.Origin[1], 0) {
		sc.Errorf("coverage.origin", "must be finite, got %v", c.Origin)
		ok = false
	}
	if c.ObstacleHeight < 0 || math.IsNaN(c.ObstacleHeight) || math.IsInf(c.ObstacleHeight, 0) {
		sc.Errorf("coverage.obstacle_height", "must be >= 0 m (0: the cells are not put in the world), got %v", c.ObstacleHeight)
		ok = false
	}
	if !ok {
		return
	}
	for i, o := range c.Obstacles {
		if o[0] < 0 || o[1] < 0 || o[0] >= n[0] || o[1] >= n[1] {
			sc.Errorf(fmt.Sprintf("coverage.obstacles[%d]", i), "cell %v is outside the %dx%d grid", o, n[0], n[1])
			ok = false
		}
	}
	if !ok || c.ObstacleHeight == 0 {
		return
	}
	sc.coverageObstacles = len(c.Obstacles)
	for _, o := range c.Obstacles {
		x, y := c.Origin[0]+float64(o[0])*c.Cell, c.Origin[1]+float64(o[1])*c.Cell
		sc.World.Obstacles = append(sc.World.Obstacles, Obstacle{Name: fmt.Sprintf("cell-%d-%d", o[0], o[1]),
			Min: geom.V(x, y, 0), Max: geom.V(x+c.Cell, y+c.Cell, c.ObstacleHeight)})
	}
}
