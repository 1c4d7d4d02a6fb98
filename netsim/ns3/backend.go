package ns3

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"skyloop/edge"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// Params configure the ns-3 network.
type Params struct {
	Profile     string       `yaml:"profile" json:"profile"`                       // ns-3 release whose Wi-Fi defaults to follow: ns-3.37 (default) or ns-3.26, as far as ns-3 3.37 can express them
	Standard    string       `yaml:"standard" json:"standard"`                     // 80211a, 80211b or 80211g
	Mode        string       `yaml:"mode" json:"mode"`                             // ConstantRateWifiManager mode, e.g. OfdmRate6Mbps, DsssRate11Mbps; empty: the standard's lowest
	Preamble    bool         `yaml:"preamble_detection" json:"preamble_detection"` // ns-3's default threshold preamble detection model
	TxPower     float64      `yaml:"tx_power" json:"tx_power"`                     // dBm
	Loss        string       `yaml:"loss" json:"loss"`                             // logdistance, friis, range or fixed
	Exponent    float64      `yaml:"exponent" json:"exponent"`                     // logdistance
	RefDistance float64      `yaml:"reference_distance" json:"reference_distance"` // logdistance, m
	RefLoss     float64      `yaml:"reference_loss" json:"reference_loss"`         // logdistance, dB
	Frequency   float64      `yaml:"frequency" json:"frequency"`                   // friis, Hz
	MaxRange    float64      `yaml:"max_range" json:"max_range"`                   // range, m
	Rss         float64      `yaml:"rss" json:"rss"`                               // fixed, dBm
	Routing     string       `yaml:"routing" json:"routing"`                       // none, aodv or olsr
	ARP         string       `yaml:"arp" json:"arp"`                               // static: every ARP cache filled at start; dynamic: ns-3's ARP exchanges over the channel
	Epoch       sim.Duration `yaml:"epoch" json:"epoch"`                           // time between synchronisations
	Pcap        bool         `yaml:"pcap" json:"pcap"`                             // per-node pcap files in the run directory
	Run         uint32       `yaml:"run" json:"run"`                               // ns-3 run number (RngRun); 0 = 1
	SyncTimeout sim.Duration `yaml:"sync_timeout" json:"sync_timeout"`             // wall-clock limit for one synchronisation before ns-3 is declared hung
}

// DefaultParams returns ns-3's defaults for an ad hoc 802.11a network at
// 6 Mbit/s with the log-distance channel (the native wifi model has the
// same ones: docs/wifi.md).
func DefaultParams() Params {
	return Params{Profile: DefaultProfile, Standard: "80211a", Preamble: true, TxPower: 16.0206, Loss: "logdistance", Exponent: 3, RefDistance: 1,
		RefLoss: 46.6777, Frequency: 5.15e9, MaxRange: 250, Rss: -60, Routing: "none", ARP: "static", Epoch: 10 * sim.Millisecond,
		SyncTimeout: 60 * sim.Second}
}

// DefaultProfile is the profile of DefaultParams: ns-3 3.37's own
// defaults.
const DefaultProfile = "ns-3.37"

// profiles are the Wi-Fi profiles the ns-3 program knows, the default
// first: the names of netsim/wifi's (docs/ns3.md, "Profiles").
var profiles = []string{DefaultProfile, "ns-3.26"}

var modes = map[string][]string{
	"80211b": {"DsssRate1Mbps", "DsssRate2Mbps", "DsssRate5_5Mbps", "DsssRate11Mbps"},
	"80211a": {"OfdmRate6Mbps", "OfdmRate9Mbps", "OfdmRate12Mbps", "OfdmRate18Mbps", "OfdmRate24Mbps", "OfdmRate36Mbps", "OfdmRate48Mbps", "OfdmRate54Mbps"},
	"80211g": {"ErpOfdmRate6Mbps", "ErpOfdmRate9Mbps", "ErpOfdmRate12Mbps", "ErpOfdmRate18Mbps", "ErpOfdmRate24Mbps", "ErpOfdmRate36Mbps", "ErpOfdmRate48Mbps", "ErpOfdmRate54Mbps"},
}

// SetEpoch sets the synchronisation period to the scenario's
// network.epoch, the engine's key, which the engine hands on (a file never
// sets Epoch directly: the engine takes the key before the backend's
// parameters are decoded, so Epoch stayed 10 ms whatever the file said).
func (p *Params) SetEpoch(d sim.Duration) { p.Epoch = d }

// Validate returns field -> message for every bad field. An empty
// profile is the default; with profile ns-3.26, which had no preamble
// detection, preamble_detection is false (a true reads as that release's
// default, as on the native backend).
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Profile == "" {
		p.Profile = DefaultProfile
	}
	if !slices.Contains(profiles, p.Profile) {
		bad["profile"] = fmt.Sprintf("unknown profile %q: want one of %s", p.Profile, strings.Join(profiles, ", "))
	} else if p.Profile == "ns-3.26" {
		p.Preamble = false
	}
	ms, ok := modes[p.Standard]
	if !ok {
		bad["standard"] = fmt.Sprintf("must be 80211a, 80211b or 80211g, got %q", p.Standard)
	} else if p.Mode != "" {
		found := false
		for _, m := range ms {
			found = found || m == p.Mode
		}
		if !found {
			bad["mode"] = fmt.Sprintf("%q is not a %s mode: want one of %s", p.Mode, p.Standard, strings.Join(ms, ", "))
		}
	}
	switch p.Loss {
	case "logdistance":
		if !(p.Exponent > 0) || !(p.RefDistance > 0) {
			bad["exponent"] = "exponent and reference_distance must be > 0"
		}
	case "friis":
		if !(p.Frequency > 0) {
			bad["frequency"] = fmt.Sprintf("must be > 0 Hz, got %v", p.Frequency)
		}
	case "range":
		if !(p.MaxRange > 0) {
			bad["max_range"] = fmt.Sprintf("must be > 0 m, got %v", p.MaxRange)
		}
	case "fixed":
	default:
		bad["loss"] = fmt.Sprintf("must be logdistance, friis, range or fixed, got %q", p.Loss)
	}
	if p.Routing != "none" && p.Routing != "aodv" && p.Routing != "olsr" {
		bad["routing"] = fmt.Sprintf("must be none, aodv or olsr, got %q", p.Routing)
	}
	if p.ARP != "static" && p.ARP != "dynamic" {
		bad["arp"] = fmt.Sprintf("must be static or dynamic, got %q", p.ARP)
	}
	if p.Epoch <= 0 {
		bad["epoch"] = fmt.Sprintf("must be positive, got %v", p.Epoch)
	}
	if p.SyncTimeout <= 0 {
		bad["sync_timeout"] = fmt.Sprintf("must be positive, got %v", p.SyncTimeout)
	}
	if math.IsNaN(p.TxPower) || math.IsInf(p.TxPower, 0) {
		bad["tx_power"] = "must be a finite number of dBm"
	}
	return bad
}

// pending is a packet whose fate is not settled at every receiver yet.
// ns-3 settles each intended receiver with exactly one RX or DROP line.
type pending struct {
	p    *netsim.Packet
	open int    // intended receivers without an outcome
	done []bool // per node: has its outcome (or is not a receiver)
}

// Backend is the ns-3 network.
type Backend struct {
	p      Params
	seed   uint64
	tr     netsim.Tracer
	outDir string
	open   func(name string) (io.Writer, error) // the run directory's files; nil: no routing.csv

	n        int
	cmd      *exec.Cmd
	stdin    *bufio.Writer
	stdout   *os.File
	rd       *bufio.Reader
	stderr   *tail
	exited   chan struct{}
	waitErr  error
	lastSync sim.Time // the last synchronisation: ns-3 has run to here
	prevSync sim.Time // the one before: the answer to a RUN is about (prevSync, lastSync]
	synced   bool
	reached  sim.Time // the latest time AdvanceTo was asked for
	unsynced bool     // TX or POS lines written since the last RUN
	pos      []geom.Vec3

	pend    map[uint64]*pending
	sent    bool   // a packet was handed to ns-3
	maxID   uint64 // the largest id handed to ns-3 (ids grow in send order)
	free    []*pending
	order   []uint64 // pending ids in send order
	out     []netsim.Delivery
	events  []tevent
	dead    netsim.Graveyard
	ev      netsim.TraceEvent
	syncs   int
	failure error
	fbuf    [][]byte
	rxAt    []int64 // per node: receptions accepted (a floor for ns-3's data_rx_packets)
}

type tevent struct {
	t    sim.Time
	kind netsim.EventType
	p    *netsim.Packet
	node netsim.NodeID
	why  netsim.DropReason
	pw   float64
	seq  int
}

// New returns an ns-3 backend; the process starts at Start.
func New(p Params, seed uint64, tr netsim.Tracer) (*Backend, error) {
	if err := p.Validate().Err("ns3"); err != nil {
		return nil, err
	}
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	if p.Mode == "" {
		p.Mode = modes[p.Standard][0]
	}
	if p.Run == 0 {
		p.Run = 1
	}
	return &Backend{p: p, seed: seed, tr: tr, pend: map[uint64]*pending{}}, nil
}

// Open implements edge.Component: with a run directory, ns-3 writes its
// own capture there (pcap: true) and the backend counts
// packets at the IP layer and Close writes them to routing.csv.
func (b *Backend) Open(env *edge.Env) error {
	b.open = env.Create
	if env.WorkDir == nil {
		return nil
	}
	var err error
	b.outDir, err = env.WorkDir("")
	return err
}

// Syncs returns the number of synchronisations so far.
func (b *Backend) Syncs() int { return b.syncs }

// tail keeps the last bytes written to it (ns-3's standard error).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// Start builds (once) and starts the ns-3 program and sets the network up.
func (b *Backend) Start(nodes []netsim.NodeInfo) error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	b.n = len(nodes)
	b.pos = make([]geom.Vec3, b.n)
	b.rxAt = make([]int64, b.n)
	b.cmd = exec.Command(bin)
	// Its own process group, so that a kill reaches any children too, and a
	// bounded wait for its output after it exits.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.cmd.WaitDelay = 2 * time.Second
	b.stderr = &tail{}
	b.cmd.Stderr = b.stderr
	in, err := b.cmd.StdinPipe()
	if err != nil {
		return err
	}
	// Our end of ns-3's standard output is a pipe read directly, with a
	// deadline per synchronisation (no goroutine hand-off per line).
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	b.cmd.Stdout = pw
	if err := b.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	pw.Close()
	b.stdout = pr
	b.rd = bufio.NewReaderSize(pr, 1<<16)
	b.stdin = bufio.NewWriterSize(in, 1<<16)
	b.exited = make(chan struct{})
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	w := b.stdin
	fmt.Fprintf(w, "SKYLOOP-NS3 1\nSEED %d %d\nNODES %d\n", b.seed%4294967295+1, b.p.Run, b.n)
	pre := "on"
	if !b.p.Preamble {
		pre = "off"
	}
	if b.p.Profile != DefaultProfile {
		fmt.Fprintf(w, "PROFILE %s\n", b.p.Profile)
	}
	fmt.Fprintf(w, "WIFI %s %s %s %s\n", b.p.Standard, b.p.Mode, pre, num(b.p.TxPower))
	switch b.p.Loss {
	case "logdistance":
		fmt.Fprintf(w, "LOSS logdistance %s %s %s\n", num(b.p.Exponent), num(b.p.RefDistance), num(b.p.RefLoss))
	case "friis":
		fmt.Fprintf(w, "LOSS friis %s 0 0\n", num(b.p.Frequency))
	case "range":
		fmt.Fprintf(w, "LOSS range %s 0 0\n", num(b.p.MaxRange))
	case "fixed":
		fmt.Fprintf(w, "LOSS fixed %s 0 0\n", num(b.p.Rss))
	}
	fmt.Fprintf(w, "ROUTING %s\nARP %s\n", b.p.Routing, b.p.ARP)
	if b.open != nil {
		fmt.Fprintf(w, "COUNTERS on\n")
	}
	if b.p.Pcap && b.outDir != "" {
		fmt.Fprintf(w, "PCAP %s\n", b.outDir)
	}
	for i, n := range nodes {
		b.pos[i] = n.Pos
		fmt.Fprintf(w, "POS %d %s %s %s\n", i, num(n.Pos.X), num(n.Pos.Y), num(n.Pos.Z))
	}
	fmt.Fprintf(w, "START\n")
	if err := w.Flush(); err != nil {
		return b.writeFailed(err)
	}
	b.deadline()
	line, err := b.readLine()
	if err != nil {
		return err
	}
	if line != fmt.Sprintf("READY %d", b.n) {
		return b.fail(fmt.Errorf("unexpected answer to setup: %s", quote([]byte(line))))
	}
	return nil
}

// kill ends the ns-3 process group.
func (b *Backend) kill() {
	if b.cmd != nil && b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		b.cmd.Process.Kill()
	}
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// readLine returns ns-3's next output line, or an error when it exits,
// hangs past the deadline set for the synchronisation, or writes a line
// longer than the reader's buffer (see readRaw).
func (b *Backend) readLine() (string, error) {
	l, err := b.readRaw()
	if err != nil {
		return "", err
	}
	return string(l), nil
}

func (b *Backend) deadline() {
	b.stdout.SetReadDeadline(time.Now().Add(time.Duration(b.p.SyncTimeout)))
}

// writeFailed reports a failed write to ns-3. A write fails when ns-3 has
// exited (a broken pipe, or a pipe already closed once its exit was
// seen), which its exit status says best.
func (b *Backend) writeFailed(err error) error {
	if b.exited != nil {
		wait := time.Second
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
			wait = 5 * time.Second
		}
		select {
		case <-b.exited:
			return b.fail(fmt.Errorf("ns-3 exited unexpectedly (%v)", b.waitErr))
		case <-time.After(wait):
		}
	}
	return b.fail(fmt.Errorf("writing to ns-3: %w", err))
}

// fail kills the process and returns err with ns-3's pid and the tail of
// its stderr.
func (b *Backend) fail(err error) error {
	if b.failure != nil {
		return b.failure
	}
	b.kill()
	if b.cmd != nil && b.cmd.Process != nil {
		err = fmt.Errorf("%w (ns-3 pid %d)", err, b.cmd.Process.Pid)
	}
	if t := b.stderr.String(); t != "" {
		err = fmt.Errorf("%w; ns-3 said:\n%s", err, t)
	}
	b.failure = err
	return err
}

// Send queues p for the next synchronisation; ns-3 transmits it at its
// exact send time.
func (b *Backend) Send(p *netsim.Packet) {
	b.dead.Flush()
	if b.failure != nil {
		p.Free()
		return
	}
	p.Refs = 1 // held until every receiver's fate is settled
	pe := b.newPending()
	pe.p = p
	b.events = append(b.events, tevent{t: p.TSend, kind: netsim.EvTx, p: p, node: p.Dst, pw: netsim.NoPower, seq: len(b.events)})
	switch {
	case p.Dst == netsim.Broadcast:
		pe.open = b.n - 1
		if p.Src >= 0 && int(p.Src) < b.n {
			pe.done[p.Src] = true
		}
	case p.Dst < 0 || int(p.Dst) >= b.n || p.Src < 0 || int(p.Src) >= b.n:
		// No such node: ns-3 is not told, the packet has no route.
		if p.Dst >= 0 && int(p.Dst) < b.n {
			pe.done[p.Dst] = true
		}
		b.events = append(b.events, tevent{t: p.TSend, kind: netsim.EvDrop, p: p, node: p.Dst, why: netsim.DropNoRoute, pw: netsim.NoPower, seq: len(b.events)})
		b.pend[p.ID] = pe
		b.order = append(b.order, p.ID)
		return
	default:
		pe.open = 1
	}
	fmt.Fprintf(b.stdin, "TX %d %d %d %d %d %d\n", p.TSend, p.ID, p.Src, p.Dst, p.Port, p.Size)
	b.unsynced = true
	b.pend[p.ID] = pe
	b.order = append(b.order, p.ID)
	if !b.sent || p.ID > b.maxID {
		b.sent, b.maxID = true, p.ID
	}
}

// SetPositions queues the positions that changed for the next
// synchronisation.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {
	if b.failure != nil {
		return
	}
	for i, p := range pos {
		if p.Sub(b.pos[i]).Norm2() > 1e-6 {
			b.pos[i] = p
			b.unsynced = true
			fmt.Fprintf(b.stdin, "POS %d %d %s %s %s\n", t, i, num(p.X), num(p.Y), num(p.Z))
		}
	}
}

// newPending returns a cleared pending record, reusing settled ones.
func (b *Backend) newPending() *pending {
	if k := len(b.free); k > 0 {
		pe := b.free[k-1]
		b.free = b.free[:k-1]
		clear(pe.done)
		pe.open = 0
		return pe
	}
	return &pending{done: make([]bool, b.n)}
}

// reasons are the drop reasons ns-3 may give (end_of_run is skyloop's own).
var reasons = map[string]netsim.DropReason{"below_sensitivity": netsim.DropSensitivity, "collision": netsim.DropCollision,
	"error_model": netsim.DropErrorModel, "busy": netsim.DropBusy, "retry_limit": netsim.DropRetryLimit, "queue": netsim.DropQueue,
	"no_route": netsim.DropNoRoute, "ttl": netsim.DropTTL}

// Clock implements netsim.Clocked: ns-3 has simulated up to the last
// synchronisation, so its clock trails the master by less than one epoch.
func (b *Backend) Clock() sim.Time { return b.lastSync }

// AdvanceTo synchronises with ns-3 when an epoch has passed since the last
// synchronisation: ns-3 runs to t with every packet sent before t, and
// reports what arrived. Between synchronisations it returns nothing, so a
// delivery is consumed up to one epoch late (never early).
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	if b.failure != nil {
		return nil, b.failure
	}
	b.reached = max(b.reached, t)
	if b.synced && t < b.lastSync.Add(b.p.Epoch) {
		return nil, nil
	}
	if err := b.sync(t); err != nil {
		return nil, err
	}
	return b.out, nil
}

// sync runs ns-3 to t, reads its answer and settles the window.
func (b *Backend) sync(t sim.Time) error {
	b.prevSync, b.lastSync = b.lastSync, t
	b.synced, b.unsynced = true, false
	b.syncs++
	fmt.Fprintf(b.stdin, "RUN %d\n", t)
	if err := b.stdin.Flush(); err != nil {
		return b.writeFailed(err)
	}
	b.deadline()
	seq := len(b.events)
	for {
		line, err := b.readRaw()
		if err != nil {
			return err
		}
		done, err := b.line(line, t, &seq)
		if err != nil {
			return b.fail(err)
		}
		if done {
			b.settle()
			return nil
		}
	}
}

// line handles one line of ns-3's answer to "RUN t": DONE ends the answer,
// RX is a reception and DROP a loss, each the outcome of one packet at one
// receiver, stamped when it happened. Every value is checked, since the
// line comes from another process. An outcome must name a packet handed to
// ns-3 and still pending, at a node the packet was meant for (a unicast
// packet's destination, which ns-3 loops back to the sender when both are
// the same; any node but the sender for a broadcast) that has no outcome
// yet, at a time in [send time, t] and not before the previous
// synchronisation (ns-3 answers in time order). An RX must come from the
// packet's source; a DROP must give one of the reasons ns-3 can tell
// (end_of_run is skyloop's, at Close). ns-3 does not repeat a reception:
// 802.11's duplicate detection and AODV's duplicate packet cache discard
// copies before the socket, and skyloop-ns3 reports each receiver once.
func (b *Backend) line(line []byte, t sim.Time, seq *int) (done bool, err error) {
	bad := func() error { return fmt.Errorf("garbled line from ns-3: %s", quote(line)) }
	f := splitFields(line, b.fbuf[:0])
	b.fbuf = f
	var kind netsim.EventType
	switch {
	case len(f) == 2 && string(f[0]) == "DONE":
		if v, ok := atoi(f[1]); !ok || v != int64(t) {
			return false, bad()
		}
		return true, nil
	case len(f) == 7 && string(f[0]) == "RX":
		kind = netsim.EvRx
	case len(f) == 5 && string(f[0]) == "DROP":
		kind = netsim.EvDrop
	default:
		return false, bad()
	}
	at, ok1 := atoi(f[1])
	id, ok2 := atoi(f[2])
	node, ok3 := atoi(f[3])
	if !ok1 || !ok2 || !ok3 || node < 0 || node >= int64(b.n) {
		return false, bad()
	}
	what := "packet"
	if kind == netsim.EvDrop {
		what = "the loss of packet"
	}
	if at > int64(t) {
		return false, fmt.Errorf("ns-3 reported %s %d at node %d at time %d, after the synchronisation time %d: %s", what, id, node, at, t, quote(line))
	}
	if at < int64(b.prevSync) {
		return false, fmt.Errorf("ns-3 reported %s %d at node %d at time %d, before the previous synchronisation time %d: %s", what, id, node, at, b.prevSync, quote(line))
	}
	if id < 0 || !b.sent || uint64(id) > b.maxID {
		return false, fmt.Errorf("ns-3 reported %s %d, which was never sent: %s", what, id, quote(line))
	}
	pe := b.pend[uint64(id)]
	if pe == nil {
		return false, fmt.Errorf("ns-3 reported %s %d at node %d, whose every receiver has an outcome already: %s", what, id, node, quote(line))
	}
	p := pe.p
	switch {
	case p.Dst != netsim.Broadcast && node != int64(p.Dst):
		return false, fmt.Errorf("ns-3 reported %s %d (node %d to node %d) at node %d, which is not its destination: %s", what, id, p.Src, p.Dst, node, quote(line))
	case p.Dst == netsim.Broadcast && node == int64(p.Src):
		return false, fmt.Errorf("ns-3 reported broadcast %s %d at node %d, its sender: %s", what, id, node, quote(line))
	case at < int64(p.TSend):
		return false, fmt.Errorf("ns-3 reported %s %d at node %d at time %d, before its send time %d: %s", what, id, node, at, p.TSend, quote(line))
	case pe.done[node]:
		return false, fmt.Errorf("ns-3 reported packet %d at node %d twice (a second outcome): %s", id, node, quote(line))
	}
	ev := tevent{t: sim.Time(at), kind: kind, p: p, node: netsim.NodeID(node), pw: netsim.NoPower, seq: *seq}
	if kind == netsim.EvRx {
		if src, ok := atoi(f[4]); !ok || src != int64(p.Src) {
			if !ok {
				return false, bad()
			}
			return false, fmt.Errorf("ns-3 reported packet %d with source node %d, but node %d sent it: %s", id, src, p.Src, quote(line))
		}
		if pw, err := strconv.ParseFloat(string(f[5]), 64); err == nil && !math.IsInf(pw, 0) {
			ev.pw = pw
		}
		b.rxAt[node]++
		p.Refs++ // the delivery's
	} else {
		why, ok := reasons[string(f[4])]
		if !ok {
			return false, fmt.Errorf("ns-3 reported the loss of packet %d at node %d for an unknown reason %q: %s", id, node, f[4], quote(line))
		}
		ev.why = why
	}
	pe.done[node] = true
	pe.open--
	b.events = append(b.events, ev)
	*seq++
	return false, nil
}

// readRaw returns the next line without its newline; the slice is only
// valid until the next read. A line may be as long as the reader's buffer
// (64 KiB); a longer one is an error, never an allocation.
func (b *Backend) readRaw() ([]byte, error) {
	l, err := b.rd.ReadSlice('\n')
	if err == nil {
		return l[:len(l)-1], nil
	}
	if err == bufio.ErrBufferFull {
		return nil, b.fail(fmt.Errorf("garbled line from ns-3, longer than %d bytes: %q...", b.rd.Size(), l[:min(80, len(l))]))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, b.fail(fmt.Errorf("ns-3 gave no answer for %v", b.p.SyncTimeout))
	}
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
	}
	return nil, b.fail(fmt.Errorf("ns-3 exited unexpectedly (%v)", b.waitErr))
}

// quote quotes a line from ns-3 for a message, cut to 120 bytes.
func quote(l []byte) string {
	if len(l) > 120 {
		return fmt.Sprintf("%q...", l[:120])
	}
	return fmt.Sprintf("%q", l)
}

// splitFields splits a line at spaces into dst.
func splitFields(l []byte, dst [][]byte) [][]byte {
	for len(l) > 0 {
		i := 0
		for i < len(l) && l[i] == ' ' {
			i++
		}
		j := i
		for j < len(l) && l[j] != ' ' {
			j++
		}
		if j > i {
			dst = append(dst, l[i:j])
		}
		l = l[j:]
	}
	return dst
}

// atoi parses a decimal integer (with an optional minus sign).
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// settle emits the window's trace events in time order, turns arrivals
// into deliveries, and lets go of packets whose every receiver has its
// outcome.
func (b *Backend) settle() {
	sort.SliceStable(b.events, func(i, j int) bool { return b.events[i].t < b.events[j].t })
	for _, e := range b.events {
		b.ev = netsim.TraceEvent{Type: e.kind, T: e.t, P: e.p, Node: e.node, Reason: e.why, RxPower: e.pw}
		b.tr.Trace(&b.ev)
		if e.kind == netsim.EvRx {
			b.out = append(b.out, netsim.Delivery{P: e.p, Dst: e.node, At: e.t, RxPower: e.pw})
			b.unref(e.p)
		}
	}
	clear(b.events)
	b.events = b.events[:0]
	keep := b.order[:0]
	for _, id := range b.order {
		pe := b.pend[id]
		if pe.open > 0 {
			keep = append(keep, id)
			continue
		}
		b.release(id, pe)
	}
	clear(b.order[len(keep):])
	b.order = keep
}

// unref drops one reference to p; the last one buries it (freed at the
// next call, after the caller is done with it).
func (b *Backend) unref(p *netsim.Packet) {
	if p.Refs--; p.Refs == 0 {
		b.dead.Bury(p)
	}
}

// release forgets a pending packet and gives up its hold on the packet.
func (b *Backend) release(id uint64, pe *pending) {
	delete(b.pend, id)
	b.unref(pe.p)
	pe.p = nil
	b.free = append(b.free, pe)
}

// Close ends the run in ns-3 and then the process. ns-3 first runs to the
// latest time the run reached (the last synchronisation may be up to an
// epoch earlier), so that packets sent since are sent there too and every
// outcome up to the end is traced; each receiver still without one then
// gets a drop with reason end_of_run, at that time (or the packet's send
// time, if later). Receptions found in that last stretch are traced but
// reach no agent: the run has ended. After a failure nothing more is
// traced. Close then frees every packet.
func (b *Backend) Close() error {
	b.dead.Flush()
	var err error
	if b.failure == nil && b.cmd != nil && b.cmd.Process != nil && (b.unsynced || b.reached > b.lastSync || !b.synced) {
		b.out = b.out[:0]
		err = b.sync(max(b.reached, b.lastSync))
		b.out = b.out[:0]
		b.dead.Flush()
	}
	if b.failure == nil {
		b.endOfRun()
	}
	for _, id := range b.order {
		pe := b.pend[id]
		pe.p.Free()
		pe.p = nil
	}
	b.order, b.pend = nil, map[uint64]*pending{}
	b.events = nil
	if b.cmd == nil || b.cmd.Process == nil {
		return err
	}
	if err == nil && b.failure == nil && b.open != nil {
		err = b.writeCounters()
	}
	if b.failure == nil {
		fmt.Fprintf(b.stdin, "QUIT\n")
		b.stdin.Flush()
	}
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.kill()
		<-b.exited
	}
	if err != nil {
		return err
	}
	if b.failure != nil {
		return nil // already reported
	}
	if b.waitErr != nil {
		return fmt.Errorf("ns-3 exited with %v: %s", b.waitErr, b.stderr.String())
	}
	return nil
}

// endOfRun traces, in time order, a drop with reason end_of_run at every
// intended receiver of every pending packet that has no outcome there.
func (b *Backend) endOfRun() {
	for _, id := range b.order {
		pe := b.pend[id]
		if pe.open == 0 {
			continue
		}
		at := max(b.lastSync, pe.p.TSend)
		if pe.p.Dst != netsim.Broadcast {
			b.events = append(b.events, tevent{t: at, kind: netsim.EvDrop, p: pe.p, node: pe.p.Dst, why: netsim.DropEndOfRun, pw: netsim.NoPower})
			continue
		}
		for r, done := range pe.done {
			if !done {
				b.events = append(b.events, tevent{t: at, kind: netsim.EvDrop, p: pe.p, node: netsim.NodeID(r), why: netsim.DropEndOfRun, pw: netsim.NoPower})
			}
		}
	}
	sort.SliceStable(b.events, func(i, j int) bool { return b.events[i].t < b.events[j].t })
	for _, e := range b.events {
		b.ev = netsim.TraceEvent{Type: e.kind, T: e.t, P: e.p, Node: e.node, Reason: e.why, RxPower: e.pw}
		b.tr.Trace(&b.ev)
	}
	b.events = b.events[:0]
}

// RoutingHeader is the header of routing.csv, which the native routing
// layer writes too: per node, data packets handed to the MAC (originated
// and forwarded) and their bytes at the IP layer, of which forwarded for
// another node, data packets received as the final destination and their
// bytes, routing control packets sent and their bytes, and control packets
// received.
const RoutingHeader = "node,data_tx_packets,data_tx_bytes,forwarded_packets,data_rx_packets,data_rx_bytes,control_tx_packets,control_tx_bytes,control_rx_packets"

// counters is one node's row of routing.csv, in the header's order.
type counters [8]int64

// writeCounters asks ns-3 for its per-node IP counters and writes them to
// routing.csv.
func (b *Backend) writeCounters() error {
	fmt.Fprintf(b.stdin, "COUNTERS\n")
	if err := b.stdin.Flush(); err != nil {
		return b.writeFailed(err)
	}
	b.deadline()
	rows := make([]counters, b.n)
	for i := 0; i <= b.n; i++ {
		line, err := b.readRaw()
		if err != nil {
			return err
		}
		if err := b.countLine(line, i, rows); err != nil {
			return b.fail(err)
		}
	}
	w, err := b.open("routing.csv")
	if err != nil {
		return fmt.Errorf("ns-3 backend: creating routing.csv: %w", err)
	}
	buf := make([]byte, 0, 64*(b.n+1))
	buf = append(buf, RoutingHeader...)
	buf = append(buf, '\n')
	for i, r := range rows {
		buf = strconv.AppendInt(buf, int64(i), 10)
		for _, v := range r {
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, v, 10)
		}
		buf = append(buf, '\n')
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("ns-3 backend: writing routing.csv: %w", err)
	}
	return nil
}

// countLine checks line i of ns-3's answer to COUNTERS: "COUNT <node> <8
// counters>" for node i < n, then "END <n>". The counters must be
// consistent: bytes between 20 (an IPv4 header; 28 with UDP's where a
// whole datagram is counted) and 65535 per packet, no more forwarded than
// sent, no fewer data receptions at a node than skyloop accepted there,
// and no control traffic without a routing protocol.
func (b *Backend) countLine(line []byte, i int, rows []counters) error {
	bad := func() error { return fmt.Errorf("garbled counter line from ns-3: %s", quote(line)) }
	f := splitFields(line, b.fbuf[:0])
	b.fbuf = f
	if i == b.n {
		if len(f) != 2 || string(f[0]) != "END" {
			return bad()
		}
		if v, ok := atoi(f[1]); !ok || v != int64(b.n) {
			return bad()
		}
		return nil
	}
	if len(f) != 10 || string(f[0]) != "COUNT" {
		return bad()
	}
	if v, ok := atoi(f[1]); !ok || v != int64(i) {
		return fmt.Errorf("ns-3 sent the counters of node %s where node %d's were due: %s", f[1], i, quote(line))
	}
	r := &rows[i]
	for k := range r {
		v, ok := atoi(f[k+2])
		if !ok || v < 0 {
			return bad()
		}
		r[k] = v
	}
	const (
		dataTx, dataTxBytes, fwd, dataRx, dataRxBytes, ctlTx, ctlTxBytes, ctlRx = 0, 1, 2, 3, 4, 5, 6, 7
	)
	bytesOK := func(pk, by, least int64) bool { return pk <= 1<<40 && by >= least*pk && by <= 65535*pk }
	switch {
	case !bytesOK(r[dataTx], r[dataTxBytes], 20), !bytesOK(r[dataRx], r[dataRxBytes], netsim.HeaderBytes),
		!bytesOK(r[ctlTx], r[ctlTxBytes], netsim.HeaderBytes):
		return fmt.Errorf("ns-3 reported impossible byte counts for node %d (under 20 or over 65535 bytes a packet): %s", i, quote(line))
	case r[fwd] > r[dataTx]:
		return fmt.Errorf("ns-3 reported node %d forwarding %d data packets but sending %d: %s", i, r[fwd], r[dataTx], quote(line))
	case r[dataRx] < b.rxAt[i]:
		return fmt.Errorf("ns-3 reported %d data packets received at node %d, but reported %d receptions there: %s", r[dataRx], i, b.rxAt[i], quote(line))
	case b.p.Routing == "none" && (r[ctlTx] != 0 || r[ctlRx] != 0):
		return fmt.Errorf("ns-3 reported routing control packets at node %d without a routing protocol: %s", i, quote(line))
	}
	return nil
}
