package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"skyloop/internal/untrusted"
	"skyloop/internal/webguard"
	"skyloop/runread"
)

// Limits of what a replay reads from a run directory, which may come from
// someone else: every file is a regular file under a size cap
// (internal/untrusted), every CSV record is at most MaxRecord bytes, and
// the tables are cut at a number of rows (the page says so). Past them a
// replay costs at most a few hundred megabytes, whatever the files hold.
const (
	// MaxNetworkEvents is the most network events (trace.csv rows) a
	// replay loads; a larger trace is cut there and the page says so.
	MaxNetworkEvents = 2_000_000
	// MaxSamples is the most vehicle samples (vehicles.csv rows) a replay
	// loads; the rest are cut and the page says so.
	MaxSamples = 2_000_000
	// MaxLogEvents is the most events.csv rows a replay loads; the rest
	// are cut and the page says so.
	MaxLogEvents = 50_000
	// MaxRecord is the most bytes of one CSV record (line); a Parquet
	// table's bounds are package runread's.
	MaxRecord = 64 << 10
	// MaxNodes is the most nodes (vehicles and fixed nodes) of a run a
	// replay takes.
	MaxNodes = 100_000
	// MaxObstacles is the most obstacles a replay draws.
	MaxObstacles = 100_000
	// maxJSON caps summary.json and config.json.
	maxJSON = 16 << 20
	// maxName caps a name (vehicle, node, obstacle, mode, event source
	// or name); maxDetail an event's detail, which is cut there.
	maxName   = 256
	maxDetail = 512
	// maxModes is the most distinct flight modes in vehicles.csv.
	maxModes = 1024
)

// What a replay sends the page (run.json): at most MaxSentSamples samples
// and MaxSentNetworkEvents network events, whatever the run's size, so
// that the page loads a 10,000-vehicle run in a few seconds and plays it
// fluidly. A larger run sends every nth sample of each vehicle (the page
// fetches the selected vehicle's every sample, vehicle.json) and every
// nth network event (which the page's figures count n times); numbers are
// rounded (positions and speeds to the millimetre).
const (
	MaxSentSamples       = 200_000
	MaxSentNetworkEvents = 200_000
)

// limits are the row caps LoadReplay applies (the constants; tests lower
// them).
var limits = struct{ samples, net, events int }{MaxSamples, MaxNetworkEvents, MaxLogEvents}

// Replay is a finished run as the page replays it: columns of the vehicles
// and trace tables (tx, rx and drop as 0, 1, 2) and of events.csv, with the names
// and obstacles. It is what /run.json serves. Every number in it is
// finite, every node id one of the run's and every time within the run.
type Replay struct {
	Scenario  string     `json:"scenario"`
	Seed      uint64     `json:"seed"`
	DurationS float64    `json:"duration_s"`
	Names     []string   `json:"names"`
	Obstacles []obstacle `json:"obstacles"`
	// Fixed are the nodes that are not vehicles, by id after them.
	Fixed      []fixedNode `json:"fixed"`
	Samples    samples     `json:"samples"`
	SamplesCut bool        `json:"samples_cut"`
	// SamplesEvery is n when run.json holds every nth sample of each
	// vehicle (0 or 1: all); NetEvery the same for the network events.
	SamplesEvery int       `json:"samples_every"`
	Net          netEvents `json:"net"`
	NetCut       bool      `json:"net_cut"`
	NetEvery     int       `json:"net_every"`
	Events       []event   `json:"events"`
	EventsCut    bool      `json:"events_cut"`
	Missing      []string  `json:"missing"`
	durationNs   int64
	nodes        int
	modes        map[string]string
	dir          string
}

type fixedNode struct {
	Name     string     `json:"name"`
	Position [3]float64 `json:"position"`
}

type obstacle struct {
	Name string     `json:"name"`
	Min  [3]float64 `json:"min"`
	Max  [3]float64 `json:"max"`
}

type samples struct {
	T        []float64 `json:"t"`
	ID       []int32   `json:"id"`
	X        []float64 `json:"x"`
	Y        []float64 `json:"y"`
	Z        []float64 `json:"z"`
	Roll     []float64 `json:"roll"`
	Pitch    []float64 `json:"pitch"`
	Yaw      []float64 `json:"yaw"`
	Speed    []float64 `json:"speed"`
	Energy   []float64 `json:"energy"`
	BatteryV []float64 `json:"battery_v"`
	Mode     []string  `json:"mode"`
	Armed    []bool    `json:"armed"`
}

type netEvents struct {
	T    []float64 `json:"t"`
	Type []int8    `json:"type"`
	Src  []int32   `json:"src"`
	Node []int32   `json:"node"`
	Gen  []float64 `json:"gen"`
}

type event struct {
	T      float64 `json:"t"`
	Node   int32   `json:"node"`
	Source string  `json:"source"`
	Name   string  `json:"name"`
	Detail string  `json:"detail"`
}

// LoadReplay reads a finished run directory: summary.json (names, node
// count, duration), config.json (obstacles and fixed nodes, when there),
// the vehicles table (required), and the trace table and events.csv when
// the run wrote them; the tables are read from CSV or Parquet, whichever
// the run wrote (package runread). Every file is read as untrusted input:
// a file that is not a regular file inside dir, is too large, or holds a
// value out of range (an id that is not one of the run's nodes, a time
// outside the run, a number that is not finite) is an error naming the
// file and line (or Parquet row).
func LoadReplay(dir string) (*Replay, error) {
	var sum struct {
		Scenario   string `json:"scenario"`
		Seed       uint64 `json:"seed"`
		DurationNs int64  `json:"duration_ns"`
		Nodes      int    `json:"nodes"`
		Vehicles   []struct {
			Name string `json:"name"`
		} `json:"vehicles"`
	}
	if err := readJSON(dir, "summary.json", &sum); err != nil {
		return nil, fmt.Errorf("%s is not a finished run directory: %w", dir, err)
	}
	sumPath := filepath.Join(dir, "summary.json")
	switch {
	case sum.DurationNs < 0:
		return nil, fmt.Errorf("%s: duration_ns %d is negative", sumPath, sum.DurationNs)
	case len(sum.Vehicles) > MaxNodes:
		return nil, fmt.Errorf("%s: %d vehicles, more than the %d a replay takes", sumPath, len(sum.Vehicles), MaxNodes)
	case sum.Nodes < 0 || sum.Nodes > MaxNodes:
		return nil, fmt.Errorf("%s: nodes %d is not a node count (0 to %d)", sumPath, sum.Nodes, MaxNodes)
	case sum.Nodes > 0 && sum.Nodes < len(sum.Vehicles):
		return nil, fmt.Errorf("%s: nodes %d is fewer than its %d vehicles", sumPath, sum.Nodes, len(sum.Vehicles))
	}
	if err := checkText(sum.Scenario, maxName); err != nil {
		return nil, fmt.Errorf("%s: scenario: %w", sumPath, err)
	}
	r := &Replay{Scenario: sum.Scenario, Seed: sum.Seed, DurationS: float64(sum.DurationNs) / 1e9, Missing: []string{}, Events: []event{},
		Names: []string{}, durationNs: sum.DurationNs, modes: map[string]string{}, dir: dir}
	for i, v := range sum.Vehicles {
		if err := checkText(v.Name, maxName); err != nil {
			return nil, fmt.Errorf("%s: vehicles[%d].name: %w", sumPath, i, err)
		}
		r.Names = append(r.Names, v.Name)
	}
	if err := r.loadConfig(); err != nil {
		return nil, err
	}
	r.nodes = sum.Nodes
	if r.nodes == 0 {
		r.nodes = len(r.Names) + len(r.Fixed)
	}
	if len(r.Names)+len(r.Fixed) > r.nodes {
		return nil, fmt.Errorf("%s: %d vehicles and %d fixed nodes (config.json), but nodes is %d", sumPath, len(r.Names), len(r.Fixed), r.nodes)
	}
	err := r.loadVehicles()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: the run was made with outputs.vehicles off or --no-files, so there is nothing to replay", dir, runread.Names(runread.Vehicles))
	}
	if err != nil {
		return nil, err
	}
	if err := r.loadTrace(); errors.Is(err, fs.ErrNotExist) {
		r.Missing = append(r.Missing, runread.Names(runread.Trace)+" (no links or network figures)")
	} else if err != nil {
		return nil, err
	}
	if err := r.loadEvents(); errors.Is(err, fs.ErrNotExist) {
		r.Missing = append(r.Missing, "events.csv")
	} else if err != nil {
		return nil, err
	}
	r.modes = nil
	return r, nil
}

// loadConfig reads the obstacles and fixed nodes of config.json, when the
// run directory has one.
func (r *Replay) loadConfig() error {
	var cfg struct {
		World struct {
			Obstacles []obstacle `json:"obstacles"`
		} `json:"world"`
		Nodes []fixedNode `json:"nodes"`
	}
	err := readJSON(r.dir, "config.json", &cfg)
	if errors.Is(err, fs.ErrNotExist) {
		r.Missing = append(r.Missing, "config.json (no obstacles or fixed nodes)")
		r.Obstacles, r.Fixed = []obstacle{}, []fixedNode{}
		return nil
	}
	if err != nil {
		return err
	}
	path := filepath.Join(r.dir, "config.json")
	if n := len(cfg.World.Obstacles); n > MaxObstacles {
		return fmt.Errorf("%s: %d obstacles, more than the %d a replay draws", path, n, MaxObstacles)
	}
	if n := len(cfg.Nodes); n > MaxNodes {
		return fmt.Errorf("%s: %d nodes, more than the %d a replay takes", path, n, MaxNodes)
	}
	for i, o := range cfg.World.Obstacles {
		if err := checkText(o.Name, maxName); err != nil {
			return fmt.Errorf("%s: world.obstacles[%d].name: %w", path, i, err)
		}
		for k := range 3 {
			if !finite(o.Min[k]) || !finite(o.Max[k]) || o.Min[k] > o.Max[k] {
				return fmt.Errorf("%s: world.obstacles[%d]: min %v, max %v is not a box", path, i, o.Min, o.Max)
			}
		}
	}
	for i, n := range cfg.Nodes {
		if err := checkText(n.Name, maxName); err != nil {
			return fmt.Errorf("%s: nodes[%d].name: %w", path, i, err)
		}
		for _, v := range n.Position {
			if !finite(v) {
				return fmt.Errorf("%s: nodes[%d].position %v is not a position", path, i, n.Position)
			}
		}
	}
	r.Obstacles, r.Fixed = cfg.World.Obstacles, cfg.Nodes
	if r.Obstacles == nil {
		r.Obstacles = []obstacle{}
	}
	if r.Fixed == nil {
		r.Fixed = []fixedNode{}
	}
	return nil
}

func (r *Replay) loadVehicles() error {
	return readTable(r.dir, runread.Vehicles, func(c *row) error {
		if len(r.Samples.T) >= limits.samples {
			r.SamplesCut = true
			return runread.Stop
		}
		t := c.time("t_ns", r.durationNs)
		id := c.node("id", 0, len(r.Names))
		x, y, z := c.num("x"), c.num("y"), c.num("z")
		vx, vy, vz := c.num("vx"), c.num("vy"), c.num("vz")
		roll, pitch, yaw := c.num("roll"), c.num("pitch"), c.num("yaw")
		energy, battery := c.num("energy_j"), c.num("battery_v")
		mode := c.text("mode", maxName)
		armed := c.str("armed")
		if c.err == nil && armed != "0" && armed != "1" {
			c.fail("armed %q is not 0 or 1", armed)
		}
		if c.err != nil {
			return c.err
		}
		m, ok := r.modes[mode]
		if !ok {
			if len(r.modes) >= maxModes {
				return c.fail("more than %d distinct modes", maxModes)
			}
			m = string([]byte(mode)) // not a view into the row
			r.modes[m] = m
		}
		s := &r.Samples
		s.T, s.ID = append(s.T, t), append(s.ID, id)
		s.X, s.Y, s.Z = append(s.X, x), append(s.Y, y), append(s.Z, z)
		s.Roll, s.Pitch, s.Yaw = append(s.Roll, roll), append(s.Pitch, pitch), append(s.Yaw, yaw)
		s.Speed = append(s.Speed, hypot3(vx, vy, vz))
		s.Energy, s.BatteryV = append(s.Energy, energy), append(s.BatteryV, battery)
		s.Mode, s.Armed = append(s.Mode, m), append(s.Armed, armed == "1")
		return nil
	})
}

func (r *Replay) loadTrace() error {
	return readTable(r.dir, runread.Trace, func(c *row) error {
		if len(r.Net.T) >= limits.net {
			r.NetCut = true
			return runread.Stop
		}
		ev := c.str("event")
		typ, ok := map[string]int8{"tx": 0, "rx": 1, "drop": 2}[ev]
		if c.err == nil && !ok {
			c.fail("event %q is not tx, rx or drop", ev)
		}
		t := c.time("t_ns", r.durationNs)
		src := c.node("src", 0, r.nodes)
		lo := int32(0)
		if typ == 0 {
			lo = -1 // a broadcast
		}
		dst := c.node("dst", lo, r.nodes)
		gen := c.time("t_gen_ns", r.durationNs)
		if c.err != nil {
			return c.err
		}
		r.Net.T, r.Net.Type = append(r.Net.T, t), append(r.Net.Type, typ)
		r.Net.Src, r.Net.Node = append(r.Net.Src, src), append(r.Net.Node, dst)
		r.Net.Gen = append(r.Net.Gen, gen)
		return nil
	})
}

func (r *Replay) loadEvents() error {
	return readTable(r.dir, runread.Events, func(c *row) error {
		if len(r.Events) >= limits.events {
			r.EventsCut = true
			return runread.Stop
		}
		e := event{T: c.time("t_ns", r.durationNs), Node: c.node("node", -1, r.nodes), Source: c.text("source", maxName),
			Name: c.text("event", maxName), Detail: cut(c.str("detail"), maxDetail)}
		if c.err != nil {
			return c.err
		}
		e.Source, e.Name, e.Detail = string([]byte(e.Source)), string([]byte(e.Name)), string([]byte(e.Detail))
		r.Events = append(r.Events, e)
		return nil
	})
}

// sentLimits are the caps of what run.json holds (the constants; tests
// lower them).
var sentLimits = struct{ samples, net int }{MaxSentSamples, MaxSentNetworkEvents}

// sent returns what run.json holds of r: every nth sample of each
// vehicle and every mth network event, n and m the least that keep them
// within MaxSentSamples and MaxSentNetworkEvents, numbers rounded.
func (r *Replay) sent() *Replay {
	out := *r
	out.SamplesEvery, out.NetEvery = 1, 1
	if n, m := len(r.Samples.T), sentLimits.samples; n > m {
		out.SamplesEvery = (n + m - 1) / m
	}
	if n, m := len(r.Net.T), sentLimits.net; n > m {
		out.NetEvery = (n + m - 1) / m
	}
	seen := make([]int, len(r.Names)) // samples of each vehicle so far
	out.Samples = r.Samples.pick(func(i int) bool {
		id := r.Samples.ID[i]
		seen[id]++
		return (seen[id]-1)%out.SamplesEvery == 0
	})
	n := &out.Net
	*n = netEvents{}
	for i := range r.Net.T {
		if i%out.NetEvery != 0 {
			continue
		}
		n.T, n.Type, n.Src = append(n.T, r.Net.T[i]), append(n.Type, r.Net.Type[i]), append(n.Src, r.Net.Src[i])
		n.Node, n.Gen = append(n.Node, r.Net.Node[i]), append(n.Gen, r.Net.Gen[i])
	}
	return &out
}

// pick returns the samples keep accepts, numbers rounded.
func (s *samples) pick(keep func(i int) bool) samples {
	var o samples
	for i := range s.T {
		if !keep(i) {
			continue
		}
		o.T, o.ID = append(o.T, s.T[i]), append(o.ID, s.ID[i])
		o.X, o.Y, o.Z = append(o.X, round(s.X[i], 1e3)), append(o.Y, round(s.Y[i], 1e3)), append(o.Z, round(s.Z[i], 1e3))
		o.Roll, o.Pitch, o.Yaw = append(o.Roll, round(s.Roll[i], 1e4)), append(o.Pitch, round(s.Pitch[i], 1e4)), append(o.Yaw, round(s.Yaw[i], 1e4))
		o.Speed, o.Energy, o.BatteryV = append(o.Speed, round(s.Speed[i], 1e3)), append(o.Energy, round(s.Energy[i], 1e1)), append(o.BatteryV, round(s.BatteryV[i], 1e3))
		o.Mode, o.Armed = append(o.Mode, s.Mode[i]), append(o.Armed, s.Armed[i])
	}
	for _, c := range []*[]float64{&o.T, &o.X, &o.Y, &o.Z, &o.Roll, &o.Pitch, &o.Yaw, &o.Speed, &o.Energy, &o.BatteryV} {
		if *c == nil {
			*c = []float64{}
		}
	}
	if o.ID == nil {
		o.ID, o.Mode, o.Armed = []int32{}, []string{}, []bool{}
	}
	return o
}

// round rounds v to 1/per.
func round(v, per float64) float64 { return math.Round(v*per) / per }

func hypot3(x, y, z float64) float64 {
	return math.Sqrt(x*x + y*y + z*z)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkText refuses text longer than max bytes or not UTF-8.
func checkText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%d bytes, more than %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not UTF-8", s)
	}
	return nil
}

// cut returns s cut to at most max bytes at a character boundary, with
// an ellipsis when cut; text that is not UTF-8 is made so.
func cut(s string, max int) string {
	s = string([]rune(s)) // replaces invalid bytes
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// readJSON reads name in dir, a regular file of at most maxJSON bytes.
func readJSON(dir, name string, v any) error {
	b, err := untrusted.ReadFileIn(dir, name, maxJSON)
	if err != nil {
		return explain(dir, name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// explain adds to the error of opening name in dir what the file is when
// it is a symbolic link: the link is refused because it leads out of the
// run directory or to something that is not a regular file (/dev/zero).
func explain(dir, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	path := filepath.Join(dir, name)
	if to, lerr := os.Readlink(path); lerr == nil {
		return fmt.Errorf("%s is a symbolic link to %s: refused, a run's files are regular files inside its directory (%w)", path, to, err)
	}
	return err
}

// row is a table's record with its columns by name; the first bad value
// sticks in err, which names the file and line (or Parquet row).
type row struct {
	r   *runread.Row
	err error
}

func (c *row) fail(format string, args ...any) error {
	if c.err == nil {
		c.err = fmt.Errorf("%s: %s", c.r.Where(), fmt.Sprintf(format, args...))
	}
	return c.err
}

func (c *row) str(name string) string {
	v, ok := c.r.Get(name)
	if !ok {
		c.fail("no column %s", name)
		return ""
	}
	return v
}

// num returns a column that must be a finite number.
func (c *row) num(name string) float64 {
	s := c.str(name)
	if c.err != nil {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !finite(v) {
		c.fail("%s %q is not a finite number", name, s)
		return 0
	}
	return v
}

// time returns a column that must be a time in ns from 0 to end, in
// seconds.
func (c *row) time(name string, end int64) float64 {
	s := c.str(name)
	if c.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > end {
		c.fail("%s %q is not a time within the run (0 to %d ns)", name, s, end)
		return 0
	}
	return float64(v) / 1e9
}

// node returns a column that must be an id from lo to n-1.
func (c *row) node(name string, lo int32, n int) int32 {
	s := c.str(name)
	if c.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < int64(lo) || v >= int64(n) {
		c.fail("%s %q is not a node of the run (%d to %d)", name, s, lo, n-1)
		return 0
	}
	return int32(v)
}

// text returns a column that must be UTF-8 of at most max bytes.
func (c *row) text(name string, max int) string {
	s := c.str(name)
	if c.err != nil {
		return ""
	}
	if err := checkText(s, max); err != nil {
		c.fail("%s: %v", name, err)
		return ""
	}
	return s
}

// readTable calls f for every record of table t of dir, from its CSV or
// Parquet file (package runread: regular files inside dir, CSV records
// of at most MaxRecord bytes), until f returns runread.Stop (not an
// error) or an error.
func readTable(dir string, t runread.Table, f func(c *row) error) error {
	c := &row{}
	return runread.Rows(dir, t, runread.Limits{MaxRecord: MaxRecord}, func(r *runread.Row) error {
		c.r = r
		return f(c)
	})
}

// ReplayPages serves the page and run.json, which makes the page replay r
// with a time scrubber instead of connecting to a live run. It answers
// only requests whose Host names listen, the address it is served on
// (webguard.Hosts: DNS rebinding gets 421), with webguard's security
// headers on every response.
func ReplayPages(r *Replay, listen string) (http.Handler, error) {
	hosts, err := webguard.NewHosts(listen, nil)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	doc, err := json.Marshal(r.sent())
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	// Each vehicle's samples at full rate, for vehicle.json, by id.
	byVehicle := make([][]int, len(r.Names))
	for i, id := range r.Samples.ID {
		byVehicle[id] = append(byVehicle[id], i)
	}
	pages := Pages()
	return hosts.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/run.json" || req.URL.Path == "/vehicle.json" {
			if req.Method != http.MethodGet && req.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, req.Method+" is not allowed here", http.StatusMethodNotAllowed)
				return
			}
		}
		if req.URL.Path == "/run.json" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
			return
		}
		if req.URL.Path == "/vehicle.json" {
			id, err := strconv.Atoi(req.URL.Query().Get("id"))
			if err != nil || id < 0 || id >= len(byVehicle) {
				http.Error(w, fmt.Sprintf("vehicle.json?id=N wants a vehicle id, 0 to %d", len(byVehicle)-1), http.StatusBadRequest)
				return
			}
			idx := byVehicle[id]
			k := 0
			s := r.Samples.pick(func(i int) bool {
				if k < len(idx) && idx[k] == i {
					k++
					return true
				}
				return false
			})
			b, err := json.Marshal(&s)
			if err != nil {
				http.Error(w, fmt.Sprintf("vehicle.json: %v", err), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		pages.ServeHTTP(w, req)
	})), nil
}
