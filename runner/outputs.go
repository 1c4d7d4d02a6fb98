package runner

import (
	"errors"
	"fmt"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/netsim/pcap"
	"skyloop/record"
	"skyloop/report"
	"skyloop/runread"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// File headers (trace.csv's and deliveries.csv's are in tracecsv).
const (
	vehiclesHeader = "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v,current_a,pressure_pa"
	eventsHeader   = "t_ns,node,source,event,detail"
	clockHeader    = "t_ns,module,offset_ns"
)

// sink is one output of a run: a file (events.csv, run.mcap, a table in
// outputs.format), the live Foxglove server, the trajectory plots. It
// takes the kinds of record it implements the interface of (traceSink,
// deliverySink, vehicleSink, eventSink, clockSink) and nothing else. Close
// is called at every end of the run, finished or not, and completes the
// files the sink encodes itself (a Parquet footer, run.mcap's index), so
// that even a failed run's are readable; it may be called again and
// returns the first error.
type sink interface {
	Close() error
}

// The kinds of record a sink may take.
type (
	traceSink interface {
		Trace(e *netsim.TraceEvent)
	}
	deliverySink interface {
		Delivery(d *netsim.Delivery, tick sim.Time)
	}
	vehicleSink interface {
		Vehicle(t sim.Time, id int, tel *vehicle.Telemetry)
	}
	eventSink interface {
		Event(t sim.Time, node netsim.NodeID, source, name, detail string)
	}
	clockSink interface {
		Clock(t sim.Time, module string, off int64)
	}
)

// What a sink may ask of the engine or the end of the run.
type (
	// dropsSink is a traceSink that uses drop events one by one (see
	// engine.DropRecorder).
	dropsSink interface{ recordsDrops() bool }
	// receptionsSink is a sink that can say whether it uses reception
	// events one by one; a trace sink that does not implement it gets
	// them all.
	receptionsSink interface{ recordsReceptions() bool }
	// interleavedSink is a sink that writes every kind of record into one
	// stream (see engine.InterleavedRecorder).
	interleavedSink interface{ interleaved() bool }
	// fileSink is a sink that draws files of its own from what it kept,
	// once the run (and its twin) are over (trajectory.png).
	fileSink interface {
		writeFiles(e *execution) error
	}
)

// openOutput opens one of a run's outputs: nothing (nil) when the scenario
// or the options turn it off.
type openOutput func(e *execution) ([]sink, error)

// outputTable is every output a run may have, in the order they are
// opened. A new output is one sink type and a row here; a new table
// format is one row of tableFormats.
var outputTable = []struct {
	name string // for errors: the scenario key or option
	open openOutput
}{
	{"outputs.format", openTables},
	{"outputs.events", openEvents},
	{"realtime", openClock},
	{"outputs.pcap", openPcap},
	{"outputs.plots", openPlots},
	{"outputs.mcap", openFoxglove},
	{"twin", openTrack},
}

// tableFormats are the values of outputs.format, each with how to open
// one of its tables in the run directory (a sink taking that table's
// kind of record). A new format is its writer's package and a row here
// (and a row in package runread's formats, for view, report html and
// sweeps to read it back).
var tableFormats = map[scenario.Format]func(dir *record.Dir, t runread.Table) (sink, error){
	scenario.CSV:     openCSVTable,
	scenario.Parquet: openParquetTable,
}

// outputs fans the run's records out to its sinks; it is the run's
// engine.Recorder. Each kind of record goes to the sinks that take it, in
// one loop, whatever the sinks are.
type outputs struct {
	all        []sink
	traces     []traceSink
	deliveries []deliverySink
	vehicles   []vehicleSink
	events     []eventSink
	clocks     []clockSink
	drops      bool // a sink uses drops one by one
	receptions bool // a sink uses receptions one by one
	inter      bool // a sink interleaves every kind of record
	track      *trackSink
}

// add makes s take the kinds of record it implements.
func (o *outputs) add(s sink) {
	o.all = append(o.all, s)
	if t, ok := s.(traceSink); ok {
		o.traces = append(o.traces, t)
	}
	if d, ok := s.(deliverySink); ok {
		o.deliveries = append(o.deliveries, d)
	}
	if v, ok := s.(vehicleSink); ok {
		o.vehicles = append(o.vehicles, v)
	}
	if ev, ok := s.(eventSink); ok {
		o.events = append(o.events, ev)
	}
	if c, ok := s.(clockSink); ok {
		o.clocks = append(o.clocks, c)
	}
	if d, ok := s.(dropsSink); ok && d.recordsDrops() {
		o.drops = true
	}
	if _, ok := s.(traceSink); ok {
		if r, ok := s.(receptionsSink); !ok || r.recordsReceptions() {
			o.receptions = true
		}
	}
	if i, ok := s.(interleavedSink); ok && i.interleaved() {
		o.inter = true
	}
	if t, ok := s.(*trackSink); ok {
		o.track = t
	}
}

// openOutputs opens every output of outputTable that e's scenario and
// options turn on. On error the outputs opened so far are returned, for
// the failed run's clean-up to close.
func openOutputs(e *execution) (*outputs, error) {
	out := &outputs{}
	for _, row := range outputTable {
		sinks, err := row.open(e)
		for _, s := range sinks {
			out.add(s)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// wantsVehicles reports whether an output takes vehicle samples (the
// engine records none otherwise).
func (o *outputs) wantsVehicles() bool { return len(o.vehicles) > 0 }

// Trace implements engine.Recorder.
func (o *outputs) Trace(e *netsim.TraceEvent) {
	for _, s := range o.traces {
		s.Trace(e)
	}
}

// Delivery implements engine.Recorder.
func (o *outputs) Delivery(d *netsim.Delivery, tick sim.Time) {
	for _, s := range o.deliveries {
		s.Delivery(d, tick)
	}
}

// Vehicle implements engine.Recorder.
func (o *outputs) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	for _, s := range o.vehicles {
		s.Vehicle(t, id, tel)
	}
}

// Event implements engine.Recorder.
func (o *outputs) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	for _, s := range o.events {
		s.Event(t, node, source, name, detail)
	}
}

// clock records a module's clock offset (clock.csv).
func (o *outputs) clock(t sim.Time, module string, off int64) {
	for _, s := range o.clocks {
		s.Clock(t, module, off)
	}
}

// RecordsDrops implements engine.DropRecorder: drops are written one by
// one to trace.csv and run.mcap (the live server shows those it gets).
func (o *outputs) RecordsDrops() bool { return o != nil && o.drops }

// RecordsReceptions implements engine.ReceptionRecorder: receptions are
// written one by one to trace.csv and run.mcap, and shown by the live view.
func (o *outputs) RecordsReceptions() bool { return o != nil && o.receptions }

// Interleaved implements engine.InterleavedRecorder: run.mcap has every
// kind of record in one stream, in the order they come.
func (o *outputs) Interleaved() bool { return o != nil && o.inter }

// close closes every sink (see sink.Close); the CSV streams need nothing
// (the run directory's Commit and Fail flush them). It returns the first
// error of each.
func (o *outputs) close() error {
	if o == nil {
		return nil
	}
	var errs []error
	for _, s := range o.all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// abandon closes the outputs of a run that failed (see close). The run's
// state may be broken by the failure (a panic), so a panic while closing
// is returned as an error rather than raised: the rest of the clean-up
// (keeping the partial directory) must still run.
func (o *outputs) abandon() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
	}()
	return o.close()
}

// writeFiles has every sink that draws files draw them (fileSink).
func (o *outputs) writeFiles(e *execution) error {
	for _, s := range o.all {
		if f, ok := s.(fileSink); ok {
			if err := f.writeFiles(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// files reports whether e writes per-record files (a run directory and
// not --no-files).
func (e *execution) files() bool { return e.dir != nil && !e.r.NoFiles() }

// openTables opens trace, deliveries and vehicles, those the scenario
// turns on, in outputs.format.
func openTables(e *execution) ([]sink, error) {
	o := e.r.Scenario().Outputs
	if e.dir == nil {
		return nil, nil
	}
	open, ok := tableFormats[o.Format.Or(scenario.CSV)]
	if !ok {
		return nil, fmt.Errorf("outputs.format: no format %q", o.Format)
	}
	if e.r.NoFiles() {
		return nil, nil
	}
	var sinks []sink
	for _, t := range []struct {
		on    bool
		table runread.Table
	}{{o.Trace, runread.Trace}, {o.Deliveries, runread.Deliveries}, {o.Vehicles, runread.Vehicles}} {
		if !t.on {
			continue
		}
		s, err := open(e.dir, t.table)
		if err != nil {
			return sinks, err
		}
		sinks = append(sinks, s)
	}
	return sinks, nil
}

// csvStream is a sink writing one CSV file of the run directory, which
// flushes it.
type csvStream struct{ w *record.CSV }

// Close implements sink: the run directory flushes the stream.
func (csvStream) Close() error { return nil }

// eventsCSV is events.csv (outputs.events).
type eventsCSV struct{ csvStream }

func openEvents(e *execution) ([]sink, error) {
	if e.dir == nil || !e.r.Scenario().Outputs.Events {
		return nil, nil
	}
	s, err := newEventsCSV(e.dir)
	if err != nil {
		return nil, err
	}
	return []sink{s}, nil
}

// newEventsCSV creates events.csv in dir.
func newEventsCSV(dir *record.Dir) (eventsCSV, error) {
	c, err := dir.CSV("events.csv", eventsHeader)
	return eventsCSV{csvStream{c}}, err
}

func (s eventsCSV) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	s.w.Int(int64(t)).Int(int64(node)).Str(source).Str(name).Quoted(detail).End()
}

// clockCSV is clock.csv: each module's clock offset (real-time runs).
type clockCSV struct{ csvStream }

func openClock(e *execution) ([]sink, error) {
	if e.dir == nil || e.r.Realtime() <= 0 {
		return nil, nil
	}
	c, err := e.dir.CSV("clock.csv", clockHeader)
	if err != nil {
		return nil, err
	}
	return []sink{clockCSV{csvStream{c}}}, nil
}

func (s clockCSV) Clock(t sim.Time, module string, off int64) {
	s.w.Int(int64(t)).Str(module).Int(off).End()
}

// pcapSink is packets.pcap (outputs.pcap): every packet as its sender
// hands it to the network.
type pcapSink struct{ w *pcap.Writer }

func openPcap(e *execution) ([]sink, error) {
	if !e.files() || !e.r.Scenario().Outputs.Pcap {
		return nil, nil
	}
	f, err := e.dir.File("packets.pcap")
	if err != nil {
		return nil, err
	}
	w, err := pcap.NewWriter(f)
	if err != nil {
		return nil, err
	}
	return []sink{pcapSink{w}}, nil
}

// recordsReceptions: the capture holds transmissions only.
func (pcapSink) recordsReceptions() bool { return false }

func (s pcapSink) Trace(e *netsim.TraceEvent) {
	if e.Type == netsim.EvTx {
		s.w.Write(e.T, e.P)
	}
}

// Close implements sink: the first error writing a packet.
func (s pcapSink) Close() error { return s.w.Err() }

// foxSink is the run's Foxglove messages: run.mcap (outputs.mcap) and the
// live server (Options.Live).
type foxSink struct {
	rec  *foxglove.Recorder
	mcap *foxglove.MCAP // ended by Close even if rec never started
}

func openFoxglove(e *execution) ([]sink, error) {
	var sinks []foxglove.Sink
	s := &foxSink{}
	if e.files() && e.r.Scenario().Outputs.MCAP {
		f, err := e.dir.File("run.mcap")
		if err != nil {
			return nil, err
		}
		s.mcap = foxglove.NewMCAP(f)
		sinks = append(sinks, s.mcap)
	}
	if e.opt.Live != nil {
		sinks = append(sinks, e.opt.Live)
	}
	if len(sinks) == 0 {
		return nil, nil
	}
	var err error
	s.rec, err = newFoxglove(e.r, sinks)
	if err != nil {
		if s.mcap == nil {
			return nil, err
		}
		return []sink{s}, err // s ends run.mcap
	}
	return []sink{s}, nil
}

func (s *foxSink) Trace(e *netsim.TraceEvent) { s.rec.Trace(e) }

func (s *foxSink) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) { s.rec.Vehicle(t, id, tel) }

func (s *foxSink) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	s.rec.Event(t, node, source, name, detail)
}

func (s *foxSink) recordsDrops() bool { return s.mcap != nil }

func (s *foxSink) interleaved() bool { return s.mcap != nil }

// Close implements sink: run.mcap's index, summary and footer.
func (s *foxSink) Close() error {
	if s.rec != nil {
		return s.rec.Close()
	}
	return s.mcap.End()
}

// plotsSink is trajectory.png and profile.png (outputs.plots), and
// twin.png for a run with a twin.
type plotsSink struct{ tracks *report.Tracker }

func openPlots(e *execution) ([]sink, error) {
	if !e.files() || !e.r.Scenario().Outputs.Plots {
		return nil, nil
	}
	return []sink{plotsSink{report.NewTracker(vehicleNames(e.r), 4000)}}, nil
}

func (s plotsSink) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	s.tracks.Add(id, t.Seconds(), tel.Pos, tel.Target, tel.HasTarget)
}

// Close implements sink: the figures are drawn by writeFiles.
func (plotsSink) Close() error { return nil }

func (s plotsSink) writeFiles(e *execution) error {
	r, dir := e.r, e.dir
	sc := r.Scenario()
	var obs []geom.Box
	for _, o := range sc.World.Obstacles {
		obs = append(obs, geom.Box{Min: o.Min, Max: o.Max})
	}
	png, err := report.TrajectoryPNG(fmt.Sprintf("%s, seed %d: trajectories, top view", sc.Name, r.Seed()), s.tracks.Tracks, obs)
	if err != nil {
		return err
	}
	if err = report.WriteFile(dir.Path("trajectory.png"), png); err != nil {
		return err
	}
	if r.Aerial() && r.Vehicles() <= 12 {
		png, err := report.ProfilePNG(fmt.Sprintf("%s, seed %d: altitude and east offset", sc.Name, r.Seed()), s.tracks.Tracks)
		if err != nil {
			return err
		}
		if err = report.WriteFile(dir.Path("profile.png"), png); err != nil {
			return err
		}
	}
	if res := e.res; res.Twin != nil {
		png, err := report.TwinPNG(fmt.Sprintf("%s, seed %d: the run (solid) and its ideal-network twin (dashed)", sc.Name, r.Seed()),
			vehicleNames(r), res.figures.Track.Positions, res.Twin.figures.Track.Positions)
		if err != nil {
			return err
		}
		if err = report.WriteFile(dir.Path("twin.png"), png); err != nil {
			return err
		}
	}
	return nil
}

// trackSink keeps every vehicle's position at every sample time after 0
// and when each vehicle's mission_done (or coverage_done) event came: what
// a run is compared with its twin on (Options.Twin, and the twin itself).
type trackSink struct {
	traj     *metrics.Track
	done     map[int]sim.Time
	vehicleN int
}

func openTrack(e *execution) ([]sink, error) {
	if !e.opt.track && e.opt.Twin == nil {
		return nil, nil
	}
	n := e.r.Vehicles()
	return []sink{&trackSink{vehicleN: n, done: map[int]sim.Time{},
		traj: &metrics.Track{Sample: e.r.Scenario().Outputs.SamplePeriod, Positions: make([][]geom.Vec3, n)}}}, nil
}

func (s *trackSink) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	if t > 0 {
		s.traj.Positions[id] = append(s.traj.Positions[id], tel.Pos)
	}
}

func (s *trackSink) Event(t sim.Time, node netsim.NodeID, source, name, _ string) {
	if source == "agent" && (name == "mission_done" || name == "coverage_done") && int(node) >= 0 && int(node) < s.vehicleN {
		if _, ok := s.done[int(node)]; !ok {
			s.done[int(node)] = t
		}
	}
}

// Close implements sink: nothing to complete.
func (*trackSink) Close() error { return nil }

// vehicleNames returns the names of r's vehicles, in id order.
func vehicleNames(r *engine.Run) []string {
	names := make([]string, r.Vehicles())
	for i := range names {
		names[i] = r.Nodes()[i].Name
	}
	return names
}

// interface checks: every sink takes what it is meant to.
var (
	_ traceSink   = pcapSink{}
	_ eventSink   = eventsCSV{}
	_ clockSink   = clockCSV{}
	_ vehicleSink = plotsSink{}
	_ fileSink    = plotsSink{}
	_ eventSink   = (*trackSink)(nil)
	_ vehicleSink = (*trackSink)(nil)
	_ traceSink   = (*foxSink)(nil)
	_ vehicleSink = (*foxSink)(nil)
	_ eventSink   = (*foxSink)(nil)
)
