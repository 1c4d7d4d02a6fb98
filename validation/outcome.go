package validation

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"

	"skyloop/engine"
	"skyloop/netsim"
	"skyloop/twin"
)

// Outcome is what the matrix reads from one run directory.
type Outcome struct {
	// Backend is the network backend the run used.
	Backend string
	// Kinds are the figures per traffic kind (summary.json), without the
	// routing protocols' own packets (the native routing layer traces
	// them as kinds aodv and olsr; ns-3 does not: they are compared
	// through routing.csv).
	Kinds map[string]KindFigures
	// Routing is the routing protocol ("" without).
	Routing string
	// Nodes are routing.csv's rows, by node (nil without the file).
	Nodes []NodeCounts
	// Completed is the number of vehicles that completed their mission
	// (twin.FromSummary: a ground station saw their last leg done, or a
	// scripted MAVLink ground station saw them land).
	Completed int
	// Collisions counts vehicle-vehicle collisions and obstacle hits.
	Collisions int
	// Stations are the PDR counts per station of a node-to-node case.
	Stations []StationCount
	// Radio are the radio parameters both backends must share, from
	// config.json.
	Radio map[string]any
}

// KindFigures are one traffic kind's figures.
type KindFigures struct {
	Expected, Rx uint64 // receptions expected and made
	Latencies    uint64 // deliveries with a latency
	P50, P95     int64  // latency percentiles, ns
}

// PDR is the kind's packet delivery ratio.
func (k KindFigures) PDR() float64 {
	if k.Expected == 0 {
		return 0
	}
	return float64(k.Rx) / float64(k.Expected)
}

// NodeCounts are one node's routing.csv counts.
type NodeCounts struct {
	DataTx, DataTxBytes, Forwarded, DataRx, DataRxBytes, ControlTx, ControlTxBytes, ControlRx uint64
}

// StationCount is a station's unicast data sent and received.
type StationCount struct{ Sent, Received uint64 }

// ControlTotals returns the routing control packets and bytes every node
// sent.
func (o *Outcome) ControlTotals() (packets, bytes uint64) {
	for _, n := range o.Nodes {
		packets += n.ControlTx
		bytes += n.ControlTxBytes
	}
	return packets, bytes
}

// Hops returns the hops per delivered data packet: one plus the packets
// forwarded per packet delivered to its destination (routing.csv), which
// is the mean hop count when no packet is lost on the way; ok is false
// when nothing was delivered.
func (o *Outcome) Hops() (hops float64, ok bool) {
	var fwd, rx uint64
	for _, n := range o.Nodes {
		fwd += n.Forwarded
		rx += n.DataRx
	}
	if rx == 0 {
		return 0, false
	}
	return 1 + float64(fwd)/float64(rx), true
}

// radioKeys are the network parameters the two backends share, which must
// be equal in both runs' config.json.
var radioKeys = []string{"standard", "mode", "tx_power", "loss", "exponent", "reference_distance", "reference_loss",
	"frequency", "max_range", "preamble_detection", "profile"}

// controlKinds are the routing protocols' own packets.
var controlKinds = []string{netsim.KindAODV.String(), netsim.KindOLSR.String()}

// Load reads the outcome of a run of case c from its run directory.
func Load(c *Case, dir string) (*Outcome, error) {
	var s engine.Summary
	if err := readJSON(filepath.Join(dir, "summary.json"), &s); err != nil {
		return nil, err
	}
	var cfg struct {
		Network struct {
			Backend string         `json:"backend"`
			Routing string         `json:"routing"`
			Params  map[string]any `json:"params"`
		} `json:"network"`
	}
	if err := readJSON(filepath.Join(dir, "config.json"), &cfg); err != nil {
		return nil, err
	}
	o := &Outcome{Backend: s.Backend, Kinds: map[string]KindFigures{}, Radio: map[string]any{}}
	for k, ks := range s.Network.ByKind {
		if slices.Contains(controlKinds, k) {
			continue
		}
		o.Kinds[k] = KindFigures{Expected: ks.Expected, Rx: ks.Rx, Latencies: ks.Latency.Count, P50: ks.Latency.P50, P95: ks.Latency.P95}
	}
	for _, k := range radioKeys {
		o.Radio[k] = cfg.Network.Params[k]
	}
	o.Routing = cfg.Network.Routing // the native routing layer's
	if r, ok := cfg.Network.Params["routing"].(string); ok && r != "none" {
		o.Routing = r // ns-3's
	}
	if s.Separation != nil {
		o.Collisions = s.Separation.Collisions
	}
	o.Collisions += s.ObstacleHits
	for _, v := range twin.FromSummary(&s, nil, nil).Vehicles {
		if v.Done != nil {
			o.Completed++
		}
	}
	var err error
	if o.Nodes, err = readRouting(filepath.Join(dir, "routing.csv")); err != nil {
		return nil, err
	}
	if c.Stations != nil {
		if o.Stations, err = readStations(dir, c.Stations); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the run: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// readRouting reads routing.csv (nil, nil when the run has none).
func readRouting(path string) ([]NodeCounts, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run: %w", err)
	}
	defer f.Close()
	want := []string{"node", "data_tx_packets", "data_tx_bytes", "forwarded_packets", "data_rx_packets", "data_rx_bytes",
		"control_tx_packets", "control_tx_bytes", "control_rx_packets"}
	var out []NodeCounts
	err = eachRow(f, path, want, func(v []uint64) error {
		if v[0] != uint64(len(out)) {
			return fmt.Errorf("node %d where node %d was due", v[0], len(out))
		}
		out = append(out, NodeCounts{v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]})
		return nil
	})
	return out, err
}

// eachRow calls row with the integer columns of every row of a CSV file
// whose header starts with want (columns past len(want) are ignored).
func eachRow(r io.Reader, name string, want []string, row func([]uint64) error) error {
	vals := make([]uint64, len(want))
	return eachRecord(r, name, want, func(line int, rec []string) error {
		for i := range want {
			var err error
			if vals[i], err = strconv.ParseUint(rec[i], 10, 64); err != nil {
				return fmt.Errorf("%s: %w", want[i], err)
			}
		}
		return row(vals)
	})
}

// eachRecord calls fn with every record after the header of the CSV file
// name, whose header must start with head; a record with fewer fields
// than head is an error, and fn's errors are given the file and line.
func eachRecord(r io.Reader, name string, head []string, fn func(line int, rec []string) error) error {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	h, err := cr.Read()
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if len(h) < len(head) || !reflect.DeepEqual(h[:len(head)], head) {
		return fmt.Errorf("reading %s: header %v, want %v", name, h, head)
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if len(rec) < len(head) {
			return fmt.Errorf("%s line %d: %d fields, want at least %d", name, line, len(rec), len(head))
		}
		if err := fn(line, rec); err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
	}
}

// maxStations bounds the stations a node-to-node run's files may name
// (a send time past maxStations dwells is an error, not an allocation).
const maxStations = 10000

// readStations counts the unicast data packets each station sent
// (trace.csv) and delivered (deliveries.csv), by send time.
func readStations(dir string, st *Stations) ([]StationCount, error) {
	var out []StationCount
	at := func(tSend uint64) (*StationCount, error) {
		i := tSend / uint64(st.Dwell)
		if i >= maxStations {
			return nil, fmt.Errorf("send time %d ns is in station %d, past the %d a run may have", tSend, i, maxStations)
		}
		for uint64(len(out)) <= i {
			out = append(out, StationCount{})
		}
		return &out[i], nil
	}
	data := netsim.KindData.String()
	count := func(file string, head []string, kindCol, timeCol int, add func(*StationCount)) error {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("reading the run: %w", err)
		}
		defer f.Close()
		return eachRecord(f, file, head, func(_ int, rec []string) error {
			if rec[kindCol] != data || (file == "trace.csv" && rec[0] != "tx") {
				return nil
			}
			t, err := strconv.ParseUint(rec[timeCol], 10, 64)
			if err != nil {
				return err
			}
			s, err := at(t)
			if err != nil {
				return err
			}
			add(s)
			return nil
		})
	}
	if err := count("trace.csv", []string{"event", "t_ns", "src", "dst", "seq", "t_gen_ns", "bytes", "kind"}, 7, 1,
		func(s *StationCount) { s.Sent++ }); err != nil {
		return nil, err
	}
	if err := count("deliveries.csv", []string{"t_rx_ns", "t_tick_ns", "src", "dst", "seq", "t_gen_ns", "t_send_ns", "bytes", "kind"}, 8, 6,
		func(s *StationCount) { s.Received++ }); err != nil {
		return nil, err
	}
	return out, nil
}

// Pool combines the outcomes of one backend's runs of a case with several
// seeds: packet, control and mission counts are summed; each latency
// percentile is the median over the runs that delivered the kind (the
// middle one, or the lower of the two middle ones), so that one seed's
// tail of a few packets does not decide the row. The runs must share the
// backend, routing, radio parameters and node count.
func Pool(outs []*Outcome) (*Outcome, error) {
	if len(outs) == 0 {
		return nil, errors.New("pooling no runs")
	}
	if len(outs) == 1 {
		return outs[0], nil
	}
	first := outs[0]
	p := &Outcome{Backend: first.Backend, Routing: first.Routing, Radio: first.Radio, Kinds: map[string]KindFigures{}}
	p50s, p95s := map[string][]int64{}, map[string][]int64{}
	for i, o := range outs {
		if o.Backend != first.Backend || o.Routing != first.Routing || !reflect.DeepEqual(o.Radio, first.Radio) {
			return nil, fmt.Errorf("pooling runs: run %d has backend %s, routing %q, radio %v; run 1 %s, %q, %v",
				i+1, o.Backend, o.Routing, o.Radio, first.Backend, first.Routing, first.Radio)
		}
		if len(o.Nodes) != len(first.Nodes) || len(o.Stations) != len(first.Stations) {
			return nil, fmt.Errorf("pooling runs: run %d has %d nodes and %d stations, run 1 %d and %d",
				i+1, len(o.Nodes), len(o.Stations), len(first.Nodes), len(first.Stations))
		}
		for k, f := range o.Kinds {
			s := p.Kinds[k]
			s.Expected += f.Expected
			s.Rx += f.Rx
			s.Latencies += f.Latencies
			p.Kinds[k] = s
			if f.Latencies > 0 {
				p50s[k] = append(p50s[k], f.P50)
				p95s[k] = append(p95s[k], f.P95)
			}
		}
		if p.Nodes == nil && o.Nodes != nil {
			p.Nodes = make([]NodeCounts, len(o.Nodes))
		}
		for j, n := range o.Nodes {
			q := &p.Nodes[j]
			q.DataTx += n.DataTx
			q.DataTxBytes += n.DataTxBytes
			q.Forwarded += n.Forwarded
			q.DataRx += n.DataRx
			q.DataRxBytes += n.DataRxBytes
			q.ControlTx += n.ControlTx
			q.ControlTxBytes += n.ControlTxBytes
			q.ControlRx += n.ControlRx
		}
		if p.Stations == nil && o.Stations != nil {
			p.Stations = make([]StationCount, len(o.Stations))
		}
		for j, s := range o.Stations {
			p.Stations[j].Sent += s.Sent
			p.Stations[j].Received += s.Received
		}
		p.Completed += o.Completed
		p.Collisions += o.Collisions
	}
	median := func(v []int64) int64 {
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	for k, s := range p.Kinds {
		if len(p50s[k]) > 0 {
			s.P50, s.P95 = median(p50s[k]), median(p95s[k])
			p.Kinds[k] = s
		}
	}
	return p, nil
}
