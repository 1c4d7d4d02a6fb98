package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"skyloop/internal/untrusted"
	"skyloop/report"
	"skyloop/runread"
	"skyloop/sim"
)

// The analyses of UB-ANC's network experiments, node to node and end to
// end (Experiment.Analysis; docs/guide.md, Network experiments of UB-ANC):
// tables over every finished run, written beside summary.csv, and their
// figures under figures/.

// analyse writes the experiment's analysis, if it has one.
func analyse(dir string, e *Experiment, preps []prepared, seeds int) error {
	if e.Analysis == nil {
		return nil
	}
	runs := analysisRuns(dir, e.Analysis, preps, seeds)
	switch e.Analysis.Type {
	case NodeToNode:
		return nodeToNode(dir, e, runs)
	case EndToEnd:
		return endToEnd(dir, e, runs)
	case Coverage:
		return coverage(dir, e, runs)
	}
	return nil
}

// aRun is a finished run with the labels the figures group it by.
type aRun struct {
	variant, value string
	seed           int
	dir            string
	line, panel    string // values of Analysis.Lines and Analysis.Panels
}

// analysisRuns lists the finished runs in variant and seed order.
func analysisRuns(dir string, a *Analysis, preps []prepared, seeds int) []aRun {
	var out []aRun
	for _, p := range preps {
		for s := 1; s <= seeds; s++ {
			rd := filepath.Join(dir, p.v.Name, fmt.Sprintf("seed%d", s))
			cfg, err := untrusted.ReadFileIn(rd, "config.json", untrusted.MaxJSON)
			if err != nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(rd, "summary.json")); err != nil {
				continue
			}
			r := aRun{variant: p.v.Name, value: p.v.Value, seed: s, dir: rd, line: p.v.Name}
			names, vals, err := flattenJSON(cfg)
			if err == nil {
				for i, n := range names {
					if n == a.Lines && a.Lines != "" {
						r.line = vals[i]
					}
					if n == a.Panels && a.Panels != "" {
						r.panel = vals[i]
					}
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// runConfig is what the analyses read from a run's config.json and
// summary.json.
type runConfig struct {
	duration sim.Duration
	names    map[int]string // node id -> name
	ids      map[string]int
	fixed    map[string][3]float64 // fixed node positions
	// The traffic source: the vehicle group running a traffic behaviour
	// with a destination, its destination's name and its kind.
	srcGroup, dst, kind string
	// The stations of the node running the stations behaviour.
	sender   string
	stations []stationRecord
}

type stationRecord struct {
	Point    [3]float64 `json:"point"`
	ArriveNs int64      `json:"arrive_ns"`
	LeaveNs  int64      `json:"leave_ns"`
}

func readRunConfig(dir string) (*runConfig, error) {
	var cfg struct {
		Duration string `json:"duration"`
		Nodes    []struct {
			ID       int        `json:"id"`
			Name     string     `json:"name"`
			Position [3]float64 `json:"position"`
		} `json:"nodes"`
		Vehicles []struct {
			Name      string `json:"name"`
			Behaviors []struct {
				Type   string `json:"type"`
				Params struct {
					Dst  string `json:"dst"`
					Kind string `json:"kind"`
				} `json:"params"`
			} `json:"behaviors"`
		} `json:"vehicles"`
	}
	var sum struct {
		Vehicles []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"vehicles"`
		Agents map[string]map[string]json.RawMessage `json:"agents"`
	}
	for f, v := range map[string]any{"config.json": &cfg, "summary.json": &sum} {
		b, err := untrusted.ReadFileIn(dir, f, untrusted.MaxJSON)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
		}
	}
	rc := &runConfig{names: map[int]string{}, ids: map[string]int{}, fixed: map[string][3]float64{}}
	d, err := sim.ParseDuration(cfg.Duration)
	if err != nil {
		return nil, fmt.Errorf("%s: duration: %w", dir, err)
	}
	rc.duration = d
	for _, v := range sum.Vehicles {
		rc.names[v.ID], rc.ids[v.Name] = v.Name, v.ID
	}
	for _, n := range cfg.Nodes {
		rc.names[n.ID], rc.ids[n.Name], rc.fixed[n.Name] = n.Name, n.ID, n.Position
	}
	for _, g := range cfg.Vehicles {
		for _, b := range g.Behaviors {
			if b.Type == "traffic" && b.Params.Dst != "" && rc.dst == "" {
				rc.srcGroup, rc.dst, rc.kind = g.Name, b.Params.Dst, b.Params.Kind
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sum.Agents)) {
		raw, ok := sum.Agents[name]["stations"]
		if !ok {
			continue
		}
		var st struct {
			Stations []stationRecord `json:"stations"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("%s: agents.%s.stations: %w", dir, name, err)
		}
		rc.sender, rc.stations = name, st.Stations
		break
	}
	return rc, nil
}

// csvRows reads a CSV file of a run row by row (report.CSVRows), after
// checking that its header has cols.
func csvRows(path string, cols []string, f func(idx map[string]int, r []string) error) error {
	checked := false
	return report.CSVRows(path, func(idx map[string]int, r []string) error {
		if !checked {
			if err := needCols(path, idx, cols...); err != nil {
				return err
			}
			checked = true
		}
		return f(idx, r)
	})
}

// tableRows reads table t of the run directory dir row by row, from its
// CSV or Parquet file (report.TableRows), after checking that its
// columns include cols.
func tableRows(dir string, t runread.Table, cols []string, f func(idx map[string]int, r []string) error) error {
	checked := false
	return report.TableRows(dir, t, func(idx map[string]int, r []string) error {
		if !checked {
			if err := needCols(filepath.Join(dir, runread.Find(dir, t)), idx, cols...); err != nil {
				return err
			}
			checked = true
		}
		return f(idx, r)
	})
}

// maxTracked bounds the packets an analysis of one run follows.
const maxTracked = 1 << 22

// needCols reports the first of cols missing from a header.
func needCols(path string, idx map[string]int, cols ...string) error {
	for _, c := range cols {
		if _, ok := idx[c]; !ok {
			return fmt.Errorf("%s: no column %s", path, c)
		}
	}
	return nil
}

// n2nRow is one station of one run.
type n2nRow struct {
	distance         float64
	tx, rx           int
	rssSum           float64
	rssN             int
	arriveNs, leaveN int64
}

// nodeToNode writes node2node.csv (per variant, seed and station: the
// distance, packets sent while the sender was at the station, packets
// received, PDR and mean RSS of the received ones) and, per panel, the
// figures received_vs_distance and received_vs_rss (mean over seeds; one
// line per value of Analysis.Lines).
func nodeToNode(dir string, e *Experiment, runs []aRun) error {
	type key struct{ line, panel string }
	type agg struct {
		dist, rx, rss []float64
		n             []int
		rssN          []int
	}
	curves := map[key]*agg{}
	var order []key
	var out [][]string
	out = append(out, []string{"experiment", "variant", "value", "seed", "line", "panel", "station", "distance_m",
		"tx_packets", "rx_packets", "pdr", "rss_mean_dbm"})
	for _, r := range runs {
		rows, err := nodeToNodeRun(r.dir)
		if err != nil {
			return fmt.Errorf("%s seed %d: %w", r.variant, r.seed, err)
		}
		k := key{r.line, r.panel}
		c := curves[k]
		if c == nil {
			c = &agg{}
			curves[k] = c
			order = append(order, k)
		}
		for i, s := range rows {
			pdr, rss := "", ""
			if s.tx > 0 {
				pdr = strconv.FormatFloat(float64(s.rx)/float64(s.tx), 'f', 4, 64)
			}
			if s.rssN > 0 {
				rss = strconv.FormatFloat(s.rssSum/float64(s.rssN), 'f', 3, 64)
			}
			out = append(out, []string{e.Name, r.variant, r.value, strconv.Itoa(r.seed), r.line, r.panel, strconv.Itoa(i),
				strconv.FormatFloat(s.distance, 'f', 3, 64), strconv.Itoa(s.tx), strconv.Itoa(s.rx), pdr, rss})
			for len(c.dist) <= i {
				c.dist = append(c.dist, s.distance)
				c.rx, c.rss = append(c.rx, 0), append(c.rss, 0)
				c.n, c.rssN = append(c.n, 0), append(c.rssN, 0)
			}
			c.rx[i] += float64(s.rx)
			c.n[i]++
			c.rss[i] += s.rssSum
			c.rssN[i] += s.rssN
		}
	}
	if err := writeCSV(filepath.Join(dir, "node2node.csv"), out); err != nil {
		return err
	}
	for _, panel := range panelsOf(order, func(k key) string { return k.panel }) {
		var byDist, byRSS []report.Series
		for _, k := range order {
			if k.panel != panel {
				continue
			}
			c := curves[k]
			sd, sr := report.Series{Name: report.Human(k.line)}, report.Series{Name: report.Human(k.line)}
			type pt struct{ x, y float64 }
			var rssPts []pt
			for i := range c.dist {
				rx := c.rx[i] / float64(c.n[i])
				sd.X, sd.Y = append(sd.X, c.dist[i]), append(sd.Y, rx)
				if c.rssN[i] > 0 {
					rssPts = append(rssPts, pt{c.rss[i] / float64(c.rssN[i]), rx})
				}
			}
			// Received vs RSS from the weakest signal up.
			slices.SortFunc(rssPts, func(a, b pt) int { return cmpFloat(a.x, b.x) })
			for _, p := range rssPts {
				sr.X, sr.Y = append(sr.X, p.x), append(sr.Y, p.y)
			}
			byDist, byRSS = append(byDist, sd), append(byRSS, sr)
		}
		title := e.Name
		if panel != "" {
			title += " (" + lastKey(e.Analysis.Panels) + " " + report.Human(panel) + ")"
		}
		if err := writeLines(dir, "received_vs_distance", panel, title+": packets received per station",
			"distance (m)", "packets received (mean over seeds)", byDist); err != nil {
			return err
		}
		if err := writeLines(dir, "received_vs_rss", panel, title+": packets received vs RSS",
			"mean RSS of the received packets (dBm)", "packets received (mean over seeds)", byRSS); err != nil {
			return err
		}
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// nodeToNodeRun counts one run's packets per station of its sender: those
// the sender handed to the network while at the station (trace.csv tx),
// and those of them the receiver got (deliveries.csv, each packet once),
// with the mean received power.
func nodeToNodeRun(dir string) ([]n2nRow, error) {
	rc, err := readRunConfig(dir)
	if err != nil {
		return nil, err
	}
	if rc.sender == "" || len(rc.stations) == 0 {
		return nil, errors.New("no node runs the stations behaviour")
	}
	if rc.dst == "" {
		return nil, errors.New("no traffic behaviour with a destination")
	}
	rpos, ok := rc.fixed[rc.dst]
	if !ok {
		return nil, fmt.Errorf("the receiver %q is not a fixed node", rc.dst)
	}
	src, dst := strconv.Itoa(rc.ids[rc.sender]), strconv.Itoa(rc.ids[rc.dst])
	rows := make([]n2nRow, len(rc.stations))
	for i, s := range rc.stations {
		d := math.Sqrt(sq(s.Point[0]-rpos[0]) + sq(s.Point[1]-rpos[1]) + sq(s.Point[2]-rpos[2]))
		rows[i] = n2nRow{distance: d, arriveNs: s.ArriveNs, leaveN: s.LeaveNs}
		if s.LeaveNs < 0 {
			rows[i].leaveN = math.MaxInt64 // there until the end
		}
	}
	station := func(t int64) int {
		for i, s := range rows {
			if s.arriveNs >= 0 && t >= s.arriveNs && t < s.leaveN {
				return i
			}
		}
		return -1
	}
	// seq -> station of the packets sent at a station.
	at := map[string]int{}
	err = tableRows(dir, runread.Trace, []string{"event", "t_ns", "src", "kind", "seq"}, func(idx map[string]int, r []string) error {
		if r[idx["event"]] != "tx" || r[idx["src"]] != src || r[idx["kind"]] != rc.kind {
			return nil
		}
		t, _ := strconv.ParseInt(r[idx["t_ns"]], 10, 64)
		if i := station(t); i >= 0 {
			if len(at) >= maxTracked {
				return fmt.Errorf("the sender sent more than %d packets at its stations", maxTracked)
			}
			at[strings.Clone(r[idx["seq"]])] = i
			rows[i].tx++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	err = tableRows(dir, runread.Deliveries, []string{"src", "dst", "kind", "seq", "rx_dbm"}, func(idx map[string]int, r []string) error {
		if r[idx["src"]] != src || r[idx["dst"]] != dst || r[idx["kind"]] != rc.kind {
			return nil
		}
		seq := r[idx["seq"]]
		i, ok := at[seq]
		if !ok || seen[seq] {
			return nil
		}
		seen[strings.Clone(seq)] = true
		rows[i].rx++
		if p, err := strconv.ParseFloat(r[idx["rx_dbm"]], 64); err == nil {
			rows[i].rssSum += p
			rows[i].rssN++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func sq(x float64) float64 { return x * x }

// RoutingHeader is the header of the per-run routing.csv that routing
// layers write, one row per node (node is its id or name).
const RoutingHeader = "node,data_tx_packets,data_tx_bytes,forwarded_packets,data_rx_packets,data_rx_bytes,control_tx_packets,control_tx_bytes,control_rx_packets"

// nodeStats are one node's counts in an end-to-end run.
type nodeStats struct {
	name                           string
	dataTx, dataTxB, fwd           int64
	dataRx, dataRxB                int64
	ctlTx, ctlTxB, ctlRx           int64
	hasFwd                         bool
	dataTxBps, dataRxBps, ctlTxBps float64
	source                         string
}

// endToEnd writes end2end.csv (per variant, seed and node: data sent,
// forwarded and received, routing control traffic, and the data and
// control rates in B/s over the run) and the figures, per panel: data_tx,
// data_rx and overhead per node (seed 1), and delay_cdf (the end-to-end
// delay of the data from the traffic source to its destination, every
// seed), one line per value of Analysis.Lines; delay_cdf.png has every
// variant.
func endToEnd(dir string, e *Experiment, runs []aRun) error {
	out := [][]string{{"experiment", "variant", "value", "seed", "line", "panel", "node", "data_tx_packets", "data_tx_bytes",
		"forwarded_packets", "data_rx_packets", "data_rx_bytes", "control_tx_packets", "control_tx_bytes", "control_rx_packets",
		"data_tx_Bps", "data_rx_Bps", "control_tx_Bps", "source"}}
	type key struct{ line, panel string }
	type perKey struct {
		stats  []nodeStats // seed 1 (or the first seed run)
		delays report.Samples
	}
	byKey := map[key]*perKey{}
	var order []key
	for _, r := range runs {
		k := key{r.line, r.panel}
		pk := byKey[k]
		fresh := pk == nil
		if fresh {
			pk = &perKey{}
		}
		stats, err := endToEndRun(r.dir, func(d float64) error { return pk.delays.Add("", d) })
		if err != nil {
			return fmt.Errorf("%s seed %d: %w", r.variant, r.seed, err)
		}
		if fresh {
			pk.stats = stats
			byKey[k] = pk
			order = append(order, k)
		}
		for _, s := range stats {
			fwd := ""
			if s.hasFwd {
				fwd = strconv.FormatInt(s.fwd, 10)
			}
			i := strconv.FormatInt
			out = append(out, []string{e.Name, r.variant, r.value, strconv.Itoa(r.seed), r.line, r.panel, s.name,
				i(s.dataTx, 10), i(s.dataTxB, 10), fwd, i(s.dataRx, 10), i(s.dataRxB, 10), i(s.ctlTx, 10), i(s.ctlTxB, 10), i(s.ctlRx, 10),
				strconv.FormatFloat(s.dataTxBps, 'f', 3, 64), strconv.FormatFloat(s.dataRxBps, 'f', 3, 64),
				strconv.FormatFloat(s.ctlTxBps, 'f', 3, 64), s.source})
		}
	}
	if err := writeCSV(filepath.Join(dir, "end2end.csv"), out); err != nil {
		return err
	}
	cdf := func(name string, d []float64) report.Series {
		s := report.Series{Name: name}
		d = slices.Clone(d)
		slices.Sort(d)
		step := max(1, len(d)/500)
		for j := 0; j < len(d); j += step {
			s.X, s.Y = append(s.X, d[j]), append(s.Y, float64(j+1)/float64(len(d)))
		}
		if len(d) > 0 {
			s.X, s.Y = append(s.X, d[len(d)-1]), append(s.Y, 1)
		}
		return s
	}
	var all []report.Series
	for _, panel := range panelsOf(order, func(k key) string { return k.panel }) {
		var tx, rx, ctl, del []report.Series
		for _, k := range order {
			if k.panel != panel {
				continue
			}
			pk := byKey[k]
			st := report.Series{Name: report.Human(k.line)}
			sr, sc := st, st
			for i, s := range pk.stats {
				x := float64(i + 1)
				st.X, st.Y = append(st.X, x), append(st.Y, s.dataTxBps)
				sr.X, sr.Y = append(sr.X, x), append(sr.Y, s.dataRxBps)
				sc.X, sc.Y = append(sc.X, x), append(sc.Y, s.ctlTxBps)
			}
			tx, rx, ctl = append(tx, st), append(rx, sr), append(ctl, sc)
			del = append(del, cdf(report.Human(k.line), pk.delays.Values("")))
			name := report.Human(k.line)
			if panel != "" {
				name += ", " + lastKey(e.Analysis.Panels) + " " + report.Human(panel)
			}
			all = append(all, cdf(name, pk.delays.Values("")))
		}
		title := e.Name
		if panel != "" {
			title += " (" + lastKey(e.Analysis.Panels) + " " + report.Human(panel) + ")"
		}
		for _, f := range []struct {
			name, title, ylabel string
			s                   []report.Series
		}{
			{"data_tx", "data transmitted per node (seed 1)", "data sent, own and forwarded (B/s)", tx},
			{"data_rx", "data received per node (seed 1)", "data received (B/s)", rx},
			{"overhead", "routing overhead per node (seed 1)", "routing control sent (B/s)", ctl},
		} {
			if err := writeLines(dir, f.name, panel, title+": "+f.title, "drone (node order)", f.ylabel, f.s); err != nil {
				return err
			}
		}
		if err := writeLines(dir, "delay_cdf", panel, title+": end-to-end delay", "delay (ms)", "fraction of delivered packets", del); err != nil {
			return err
		}
	}
	if len(order) > 0 && order[0].panel != "" {
		return writeLines(dir, "delay_cdf", "", e.Name+": end-to-end delay", "delay (ms)", "fraction of delivered packets", all)
	}
	return nil
}

// endToEndRun reads one run's per-node counts (routing.csv when the
// routing layer wrote it; else what trace.csv and deliveries.csv tell:
// data sent by each node as origin, data received at each node as final
// destination, control packets of kinds aodv and olsr) and hands delay
// the end-to-end delays (ms) of the data from the traffic source to its
// destination, in file order.
func endToEndRun(dir string, delay func(ms float64) error) ([]nodeStats, error) {
	rc, err := readRunConfig(dir)
	if err != nil {
		return nil, err
	}
	ids := slices.Sorted(maps.Keys(rc.names))
	stats := make([]nodeStats, len(ids))
	pos := map[string]int{}
	for i, id := range ids {
		stats[i].name = rc.names[id]
		pos[strconv.Itoa(id)] = i
		pos[rc.names[id]] = i
	}
	secs := rc.duration.Seconds()
	rp := filepath.Join(dir, "routing.csv")
	_, err = os.Lstat(rp)
	routing := err == nil
	if routing {
		cols := strings.Split(RoutingHeader, ",")
		n := 0
		err := csvRows(rp, cols, func(idx map[string]int, r []string) error {
			n++
			i, ok := pos[r[idx["node"]]]
			if !ok {
				return fmt.Errorf("row %d: unknown node %q", n, r[idx["node"]])
			}
			s := &stats[i]
			for _, f := range []struct {
				col string
				dst *int64
			}{{"data_tx_packets", &s.dataTx}, {"data_tx_bytes", &s.dataTxB}, {"forwarded_packets", &s.fwd},
				{"data_rx_packets", &s.dataRx}, {"data_rx_bytes", &s.dataRxB}, {"control_tx_packets", &s.ctlTx},
				{"control_tx_bytes", &s.ctlTxB}, {"control_rx_packets", &s.ctlRx}} {
				v, err := strconv.ParseInt(r[idx[f.col]], 10, 64)
				if err != nil {
					return fmt.Errorf("row %d: %s: %w", n, f.col, err)
				}
				*f.dst = v
			}
			s.hasFwd, s.source = true, "routing.csv"
			return nil
		})
		if err != nil {
			return nil, err
		}
	} else {
		err := tableRows(dir, runread.Trace, []string{"event", "src", "kind", "bytes"}, func(idx map[string]int, r []string) error {
			i, ok := pos[r[idx["src"]]]
			if r[idx["event"]] != "tx" || !ok {
				return nil
			}
			b, _ := strconv.ParseInt(r[idx["bytes"]], 10, 64)
			switch r[idx["kind"]] {
			case "aodv", "olsr":
				stats[i].ctlTx++
				stats[i].ctlTxB += b
			case rc.kind:
				stats[i].dataTx++
				stats[i].dataTxB += b
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i := range stats {
			stats[i].source = "trace"
		}
	}
	// End-to-end delays: from the first node of the source group to the
	// destination.
	srcID, dstID := -1, -1
	if id, ok := rc.ids[rc.srcGroup+"-0"]; ok {
		srcID = id
	}
	if id, ok := rc.ids[rc.dst]; ok {
		dstID = id
	}
	sid, did := strconv.Itoa(srcID), strconv.Itoa(dstID)
	err = tableRows(dir, runread.Deliveries, []string{"src", "dst", "kind", "bytes", "latency_ns"}, func(idx map[string]int, r []string) error {
		kind := r[idx["kind"]]
		if i, ok := pos[r[idx["dst"]]]; ok && !routing {
			switch kind {
			case "aodv", "olsr":
				stats[i].ctlRx++
			case rc.kind:
				b, _ := strconv.ParseInt(r[idx["bytes"]], 10, 64)
				stats[i].dataRx++
				stats[i].dataRxB += b
			}
		}
		if r[idx["src"]] == sid && r[idx["dst"]] == did && kind == rc.kind {
			if v, err := strconv.ParseFloat(r[idx["latency_ns"]], 64); err == nil {
				return delay(v / 1e6)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range stats {
		s := &stats[i]
		if secs > 0 {
			s.dataTxBps, s.dataRxBps, s.ctlTxBps = float64(s.dataTxB)/secs, float64(s.dataRxB)/secs, float64(s.ctlTxB)/secs
		}
	}
	return stats, nil
}

// panelsOf lists the distinct panels of keys in first-seen order.
func panelsOf[K any](keys []K, panel func(K) string) []string {
	var out []string
	for _, k := range keys {
		if p := panel(k); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// writeLines draws a line chart into figures/<name>[-<panel>].png.
func writeLines(dir, name, panel, title, xlabel, ylabel string, series []report.Series) error {
	if len(series) == 0 {
		return nil
	}
	file := name
	if panel != "" {
		file += "-" + fileSafe(panel)
	}
	png, err := report.LinesPNG(title, xlabel, ylabel, series)
	if err != nil {
		return err
	}
	fd := filepath.Join(dir, "figures")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(fd, file+".png"), png)
}

// fileSafe makes a value usable in a file name.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == '=' {
			return r
		}
		return '_'
	}, s)
}

// writeCSV writes rows atomically (report.WriteFile).
func writeCSV(path string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return err
	}
	return report.WriteFile(path, buf.Bytes())
}
