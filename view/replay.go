package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"skyloop/report"
)

// MaxNetworkEvents is the most network events (trace.csv rows) a replay
// loads; a larger trace is cut there and the page says so.
const MaxNetworkEvents = 2_000_000

// Replay is a finished run as the page replays it: columns of vehicles.csv,
// trace.csv (tx, rx and drop as 0, 1, 2) and events.csv, with the names
// and obstacles. It is what /run.json serves.
type Replay struct {
	Scenario  string     `json:"scenario"`
	Seed      uint64     `json:"seed"`
	DurationS float64    `json:"duration_s"`
	Names     []string   `json:"names"`
	Obstacles []obstacle `json:"obstacles"`
	// Fixed are the nodes that are not vehicles, by id after them.
	Fixed   []fixedNode `json:"fixed"`
	Samples samples     `json:"samples"`
	Net     netEvents   `json:"net"`
	NetCut  bool        `json:"net_cut"`
	Events  []event     `json:"events"`
	Missing []string    `json:"missing"`
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
	ID       []int     `json:"id"`
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
	Node   int     `json:"node"`
	Source string  `json:"source"`
	Name   string  `json:"name"`
	Detail string  `json:"detail"`
}

// LoadReplay reads a finished run directory: summary.json (names),
// config.json (obstacles), vehicles.csv (required), and trace.csv and
// events.csv when the run wrote them.
func LoadReplay(dir string) (*Replay, error) {
	var sum struct {
		Scenario   string `json:"scenario"`
		Seed       uint64 `json:"seed"`
		DurationNs int64  `json:"duration_ns"`
		Vehicles   []struct {
			Name string `json:"name"`
		} `json:"vehicles"`
	}
	if err := readJSON(filepath.Join(dir, "summary.json"), &sum); err != nil {
		return nil, fmt.Errorf("%s is not a finished run directory: %w", dir, err)
	}
	r := &Replay{Scenario: sum.Scenario, Seed: sum.Seed, DurationS: float64(sum.DurationNs) / 1e9, Missing: []string{}, Events: []event{}}
	for _, v := range sum.Vehicles {
		r.Names = append(r.Names, v.Name)
	}
	var cfg struct {
		World struct {
			Obstacles []obstacle `json:"obstacles"`
		} `json:"world"`
		Nodes []fixedNode `json:"nodes"`
	}
	if err := readJSON(filepath.Join(dir, "config.json"), &cfg); err == nil {
		r.Obstacles, r.Fixed = cfg.World.Obstacles, cfg.Nodes
	}
	if r.Fixed == nil {
		r.Fixed = []fixedNode{}
	}
	if r.Obstacles == nil {
		r.Obstacles = []obstacle{}
	}
	err := rows(filepath.Join(dir, "vehicles.csv"), func(c cols) error {
		id := int(c.num("id"))
		if id < 0 || id >= len(r.Names) {
			return fmt.Errorf("vehicle id %d out of range", id)
		}
		s := &r.Samples
		vx, vy, vz := c.num("vx"), c.num("vy"), c.num("vz")
		s.T = append(s.T, c.num("t_ns")/1e9)
		s.ID = append(s.ID, id)
		s.X, s.Y, s.Z = append(s.X, c.num("x")), append(s.Y, c.num("y")), append(s.Z, c.num("z"))
		s.Roll, s.Pitch, s.Yaw = append(s.Roll, c.num("roll")), append(s.Pitch, c.num("pitch")), append(s.Yaw, c.num("yaw"))
		s.Speed = append(s.Speed, hypot3(vx, vy, vz))
		s.Energy, s.BatteryV = append(s.Energy, c.num("energy_j")), append(s.BatteryV, c.num("battery_v"))
		s.Mode = append(s.Mode, c.str("mode"))
		s.Armed = append(s.Armed, c.str("armed") == "1")
		return c.err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no vehicles.csv: the run was made with outputs.vehicles off or --no-files, so there is nothing to replay", dir)
	}
	if err != nil {
		return nil, err
	}
	err = rows(filepath.Join(dir, "trace.csv"), func(c cols) error {
		if len(r.Net.T) >= MaxNetworkEvents {
			r.NetCut = true
			return errStop
		}
		typ := map[string]int8{"tx": 0, "rx": 1, "drop": 2}[c.str("event")]
		r.Net.T = append(r.Net.T, c.num("t_ns")/1e9)
		r.Net.Type = append(r.Net.Type, typ)
		r.Net.Src = append(r.Net.Src, int32(c.num("src")))
		r.Net.Node = append(r.Net.Node, int32(c.num("dst")))
		r.Net.Gen = append(r.Net.Gen, c.num("t_gen_ns")/1e9)
		return c.err
	})
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.Missing = append(r.Missing, "trace.csv (no links or network figures)")
	case err != nil && !errors.Is(err, errStop):
		return nil, err
	}
	err = rows(filepath.Join(dir, "events.csv"), func(c cols) error {
		r.Events = append(r.Events, event{T: c.num("t_ns") / 1e9, Node: int(c.num("node")), Source: c.str("source"), Name: c.str("event"), Detail: c.str("detail")})
		return c.err
	})
	if errors.Is(err, os.ErrNotExist) {
		r.Missing = append(r.Missing, "events.csv")
	} else if err != nil {
		return nil, err
	}
	return r, nil
}

var errStop = errors.New("stop")

func hypot3(x, y, z float64) float64 {
	return math.Sqrt(x*x + y*y + z*z)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// cols is a CSV row with its columns by name; the first parse error
// sticks in err.
type cols struct {
	idx map[string]int
	row []string
	err error
}

func (c *cols) str(name string) string {
	i, ok := c.idx[name]
	if !ok || i >= len(c.row) {
		if c.err == nil {
			c.err = fmt.Errorf("no column %s", name)
		}
		return ""
	}
	return c.row[i]
}

func (c *cols) num(name string) float64 {
	s := c.str(name)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("column %s: %q is not a number", name, s)
	}
	return v
}

// rows calls f for every row of a CSV file after its header.
func rows(path string, f func(c cols) error) error {
	return report.CSVRows(path, func(idx map[string]int, row []string) error {
		return f(cols{idx: idx, row: row})
	})
}

// ReplayPages serves the page and run.json, which makes the page replay r
// with a time scrubber instead of connecting to a live run.
func ReplayPages(r *Replay) (http.Handler, error) {
	doc, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	pages := Pages()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/run.json" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
			return
		}
		pages.ServeHTTP(w, req)
	}), nil
}
