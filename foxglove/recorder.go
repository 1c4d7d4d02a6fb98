// Package foxglove writes a run as an MCAP file (github.com/foxglove/mcap)
// that Foxglove opens as it opens a robot's log: vehicles as frames
// (foxglove.FrameTransform on /tf) drawn as boxes with the world's
// obstacles (foxglove.SceneUpdate on /scene), geodetic positions for the
// Map panel (foxglove.LocationFix on /vehicles/NAME/fix), each vehicle's
// telemetry (/vehicles/NAME/telemetry), every network event
// (/network/events) and events.csv's rows (foxglove.Log on /events). The
// messages are JSON with JSON Schemas; log times are simulated
// nanoseconds, so the same run gives the same file byte for byte. The same
// messages can be served live over the Foxglove WebSocket protocol
// (Server).
//
// A Recorder builds the messages once and hands them to its sinks: the
// MCAP file (NewMCAP) and the live server.
package foxglove

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Topics of run.mcap.
const (
	TopicTF      = "/tf"
	TopicScene   = "/scene"
	TopicNetwork = "/network/events"
	TopicEvents  = "/events"
)

// TelemetryTopic and FixTopic return a vehicle's topics.
func TelemetryTopic(name string) string { return "/vehicles/" + name + "/telemetry" }

// FixTopic returns the topic of a vehicle's geodetic positions.
func FixTopic(name string) string { return "/vehicles/" + name + "/fix" }

// WorldFrame is the fixed frame: x east, y north, z up, metres.
const WorldFrame = "world"

// Box is an obstacle of the world.
type Box struct {
	Name     string
	Min, Max geom.Vec3
}

// Run describes what a run's file shows besides its samples.
type Run struct {
	// Nodes are the node names by id; the first Vehicles are vehicles.
	Nodes    []string
	Vehicles int
	// Origin is the WGS84 position of the local origin.
	Origin geom.Geodetic
	// Boxes are the world's obstacles.
	Boxes []Box
	// Fixed are the positions of the nodes that are not vehicles (ground
	// stations, relays), by node id from Vehicles on.
	Fixed []geom.Vec3
	// Scenario and Seed go into the file's metadata.
	Scenario string
	Seed     uint64
}

// Channel is a topic with its schema, as sinks announce it.
type Channel struct {
	ID         uint16
	Topic      string
	SchemaID   uint16
	SchemaName string
	Schema     string // JSON Schema
}

// Sink receives a run's messages: JSON, on the channels given to Start.
// Message must not block (the run never waits for a sink).
type Sink interface {
	// Start announces the run and its channels.
	Start(run Run, channels []Channel) error
	// Message hands over message data on channel ch at simulated time t;
	// the sink may keep data. Key tells state from events: messages with
	// the same channel and key >= 0 are states of one thing (a vehicle's
	// transform), each replacing the last; key -1 marks an event.
	Message(ch uint16, key int, t sim.Time, data []byte)
	// End ends the run: the file is completed, the live clients told.
	End() error
}

// PositionSink is a Sink that also takes each vehicle's position at
// every sample, as numbers (the live server batches them for the web
// view: TopicPositions). Position must not block.
type PositionSink interface {
	Position(t sim.Time, id int, p geom.Vec3)
}

// NetworkSink is a Sink that also takes each network event as numbers
// (the live server batches them for the web view: TopicNetworkBatch):
// typ 0 tx, 1 rx, 2 drop; node is the destination of a tx (-1
// broadcast), else the receiver; state tells a state update from other
// traffic. NetworkEvent must not block.
type NetworkSink interface {
	NetworkEvent(t sim.Time, typ int8, src, node int32, gen sim.Time, state bool)
}

// Recorder turns a run's samples, network events and events into
// Foxglove messages for its sinks. Its methods match the engine's
// recorder hooks; it is not safe for concurrent use.
type Recorder struct {
	sinks  []Sink
	run    Run
	tel    []uint16 // per vehicle: telemetry channel
	fix    []uint16 // per vehicle: location fix channel
	pos    []PositionSink
	net    []NetworkSink
	closed bool
	err    error
}

// Channel ids of the fixed topics.
const (
	chTF uint16 = iota + 1
	chScene
	chNetwork
	chEvents
	chFirstVehicle
)

// Schema ids.
const (
	schFrameTransform uint16 = iota + 1
	schSceneUpdate
	schLocationFix
	schLog
	schTelemetry
	schNetworkEvent
)

// schemas lists the schemas by id.
var schemas = []struct {
	id   uint16
	name string
	data string
}{
	{schFrameTransform, "foxglove.FrameTransform", frameTransformSchema},
	{schSceneUpdate, "foxglove.SceneUpdate", sceneUpdateSchema},
	{schLocationFix, "foxglove.LocationFix", locationFixSchema},
	{schLog, "foxglove.Log", logSchema},
	{schTelemetry, "skyloop.Telemetry", telemetrySchema},
	{schNetworkEvent, "skyloop.NetworkEvent", networkEventSchema},
}

// NewRecorder starts a run on the sinks: it announces the channels, then
// the scene (the obstacles, and a box per vehicle that follows its frame).
func NewRecorder(run Run, sinks ...Sink) (*Recorder, error) {
	if run.Vehicles < 0 || run.Vehicles > len(run.Nodes) {
		return nil, fmt.Errorf("foxglove: %d vehicles among %d nodes", run.Vehicles, len(run.Nodes))
	}
	if int(chFirstVehicle)+2*run.Vehicles > math.MaxUint16 {
		return nil, fmt.Errorf("foxglove: %d vehicles are more than the channel ids can hold", run.Vehicles)
	}
	r := &Recorder{sinks: sinks, run: run}
	for _, s := range sinks {
		if p, ok := s.(PositionSink); ok {
			r.pos = append(r.pos, p)
		}
		if n, ok := s.(NetworkSink); ok {
			r.net = append(r.net, n)
		}
	}
	var chans []Channel
	channel := func(id, schema uint16, topic string) {
		chans = append(chans, Channel{ID: id, Topic: topic, SchemaID: schema, SchemaName: schemas[schema-1].name, Schema: schemas[schema-1].data})
	}
	channel(chTF, schFrameTransform, TopicTF)
	channel(chScene, schSceneUpdate, TopicScene)
	channel(chNetwork, schNetworkEvent, TopicNetwork)
	channel(chEvents, schLog, TopicEvents)
	for i := 0; i < run.Vehicles; i++ {
		t, f := chFirstVehicle+uint16(2*i), chFirstVehicle+uint16(2*i+1)
		r.tel, r.fix = append(r.tel, t), append(r.fix, f)
		channel(t, schTelemetry, TelemetryTopic(run.Nodes[i]))
		channel(f, schLocationFix, FixTopic(run.Nodes[i]))
	}
	for _, s := range sinks {
		if err := s.Start(run, chans); err != nil {
			return nil, err
		}
	}
	r.scene()
	return r, r.err
}

// write hands message v on channel ch at time t to every sink.
func (r *Recorder) write(ch uint16, key int, t sim.Time, v any) {
	if r.closed || r.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.err = fmt.Errorf("foxglove: %w", err)
		return
	}
	for _, s := range r.sinks {
		s.Message(ch, key, t, b)
	}
}

// JSON shapes of the messages.
type (
	stamp struct {
		Sec  int64 `json:"sec"`
		Nsec int64 `json:"nsec"`
	}
	vec3 struct {
		X num `json:"x"`
		Y num `json:"y"`
		Z num `json:"z"`
	}
	quat struct {
		X num `json:"x"`
		Y num `json:"y"`
		Z num `json:"z"`
		W num `json:"w"`
	}
	color struct {
		R float64 `json:"r"`
		G float64 `json:"g"`
		B float64 `json:"b"`
		A float64 `json:"a"`
	}
	pose struct {
		Position    vec3 `json:"position"`
		Orientation quat `json:"orientation"`
	}
	cube struct {
		Pose  pose  `json:"pose"`
		Size  vec3  `json:"size"`
		Color color `json:"color"`
	}
	keyValue struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	entity struct {
		Timestamp   stamp      `json:"timestamp"`
		FrameID     string     `json:"frame_id"`
		ID          string     `json:"id"`
		Lifetime    stamp      `json:"lifetime"`
		FrameLocked bool       `json:"frame_locked"`
		Metadata    []keyValue `json:"metadata"`
		Cubes       []cube     `json:"cubes"`
	}
	sceneUpdate struct {
		Deletions []struct{} `json:"deletions"`
		Entities  []entity   `json:"entities"`
	}
	frameTransform struct {
		Timestamp   stamp  `json:"timestamp"`
		Parent      string `json:"parent_frame_id"`
		Child       string `json:"child_frame_id"`
		Translation vec3   `json:"translation"`
		Rotation    quat   `json:"rotation"`
	}
	locationFix struct {
		Timestamp      stamp  `json:"timestamp"`
		FrameID        string `json:"frame_id"`
		Latitude       num    `json:"latitude"`
		Longitude      num    `json:"longitude"`
		Altitude       num    `json:"altitude"`
		Covariance     [9]num `json:"position_covariance"`
		CovarianceType int    `json:"position_covariance_type"`
	}
	logMsg struct {
		Timestamp stamp  `json:"timestamp"`
		Level     int    `json:"level"`
		Message   string `json:"message"`
		Name      string `json:"name"`
		File      string `json:"file"`
		Line      int    `json:"line"`
	}
	telemetry struct {
		Timestamp stamp  `json:"timestamp"`
		ID        int    `json:"id"`
		Name      string `json:"name"`
		Position  vec3   `json:"position"`
		Velocity  vec3   `json:"velocity"`
		Roll      num    `json:"roll"`
		Pitch     num    `json:"pitch"`
		Yaw       num    `json:"yaw"`
		Speed     num    `json:"speed"`
		Mode      string `json:"mode"`
		Armed     bool   `json:"armed"`
		Landed    bool   `json:"landed"`
		Energy    num    `json:"energy_j"`
		Distance  num    `json:"distance_m"`
		BatteryV  num    `json:"battery_v"`
		CurrentA  num    `json:"current_a"`
		Remaining num    `json:"battery_remaining"`
	}
	networkEvent struct {
		Timestamp stamp  `json:"timestamp"`
		Event     string `json:"event"`
		Src       int64  `json:"src"`
		Dst       int64  `json:"dst"`
		Node      int64  `json:"node"`
		Seq       uint64 `json:"seq"`
		TGen      int64  `json:"t_gen_ns"`
		Bytes     int    `json:"bytes"`
		Kind      string `json:"kind"`
		Reason    string `json:"reason"`
		RxDbm     num    `json:"rx_dbm"`
	}
)

// num is a float that JSON writes as null when it is not finite.
type num float64

// MarshalJSON implements json.Marshaler.
func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func stampOf(t sim.Time) stamp {
	t = max(t, 0)
	return stamp{Sec: int64(t) / 1e9, Nsec: int64(t) % 1e9}
}

func v3(v geom.Vec3) vec3 { return vec3{num(v.X), num(v.Y), num(v.Z)} }

func q4(q geom.Quat) quat { return quat{num(q.X), num(q.Y), num(q.Z), num(q.W)} }

// scene writes the scene at t = 0: the obstacles in the world frame, and
// a box per vehicle locked to its frame.
func (r *Recorder) scene() {
	var up sceneUpdate
	up.Deletions = []struct{}{}
	world := entity{FrameID: WorldFrame, ID: "world", Metadata: []keyValue{}, Cubes: []cube{}}
	for _, b := range r.run.Boxes {
		c := b.Min.Add(b.Max).Scale(0.5)
		world.Cubes = append(world.Cubes, cube{Pose: pose{Position: v3(c), Orientation: q4(geom.Identity)},
			Size: v3(b.Max.Sub(b.Min)), Color: color{R: 0.55, G: 0.55, B: 0.6, A: 0.6}})
		world.Metadata = append(world.Metadata, keyValue{Key: "obstacle", Value: b.Name})
	}
	up.Entities = append(up.Entities, world)
	for i, p := range r.run.Fixed {
		id := r.run.Vehicles + i
		if id >= len(r.run.Nodes) {
			break
		}
		up.Entities = append(up.Entities, entity{FrameID: WorldFrame, ID: "node/" + r.run.Nodes[id],
			Metadata: []keyValue{{Key: "id", Value: strconv.Itoa(id)}, {Key: "name", Value: r.run.Nodes[id]}},
			Cubes: []cube{{Pose: pose{Position: v3(p), Orientation: q4(geom.Identity)}, Size: vec3{0.8, 0.8, 0.8},
				Color: color{R: 0.95, G: 0.55, B: 0.1, A: 1}}}})
	}
	for i := 0; i < r.run.Vehicles; i++ {
		name := r.run.Nodes[i]
		up.Entities = append(up.Entities, entity{FrameID: name, ID: "vehicle/" + name, FrameLocked: true,
			Metadata: []keyValue{{Key: "id", Value: strconv.Itoa(i)}},
			Cubes: []cube{{Pose: pose{Orientation: q4(geom.Identity)}, Size: vec3{0.5, 0.5, 0.15},
				Color: color{R: 0.1, G: 0.45, B: 0.85, A: 1}}}})
	}
	r.write(chScene, 0, 0, &up)
}

// Vehicle writes vehicle id's sample at t: its frame, its telemetry and
// its geodetic position.
func (r *Recorder) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	if id < 0 || id >= r.run.Vehicles {
		return
	}
	if !r.closed && r.err == nil {
		for _, s := range r.pos {
			s.Position(t, id, tel.Pos)
		}
	}
	name := r.run.Nodes[id]
	ts := stampOf(t)
	att := geom.FromEuler(tel.Roll, tel.Pitch, tel.Yaw)
	r.write(chTF, id, t, &frameTransform{Timestamp: ts, Parent: WorldFrame, Child: name, Translation: v3(tel.Pos), Rotation: q4(att)})
	r.write(r.tel[id], 0, t, &telemetry{Timestamp: ts, ID: id, Name: name, Position: v3(tel.Pos), Velocity: v3(tel.Vel),
		Roll: num(tel.Roll), Pitch: num(tel.Pitch), Yaw: num(tel.Yaw), Speed: num(tel.Vel.Norm()), Mode: tel.Mode.String(),
		Armed: tel.Armed, Landed: tel.Landed, Energy: num(tel.Energy), Distance: num(tel.Distance),
		BatteryV: num(tel.BatteryV), CurrentA: num(tel.BatteryA), Remaining: num(tel.BatteryRemaining)})
	g := r.run.Origin.ToGeodetic(tel.Pos)
	r.write(r.fix[id], 0, t, &locationFix{Timestamp: ts, FrameID: name, Latitude: num(g.Lat), Longitude: num(g.Lon), Altitude: num(g.Alt)})
}

// Trace writes a network event.
func (r *Recorder) Trace(e *netsim.TraceEvent) {
	p := e.P
	ev := networkEvent{Timestamp: stampOf(e.T), Event: e.Type.String(), Src: int64(p.Src), Dst: int64(p.Dst), Node: int64(e.Node),
		Seq: uint64(p.Seq), TGen: int64(p.TGen), Bytes: p.Size, Kind: p.Kind.String(), RxDbm: num(e.RxPower)}
	if e.Type == netsim.EvDrop {
		ev.Reason = e.Reason.String()
	}
	r.write(chNetwork, -1, e.T, &ev)
	if !r.closed && r.err == nil {
		for _, s := range r.net {
			s.NetworkEvent(e.T, int8(e.Type), int32(p.Src), int32(e.Node), p.TGen, p.Kind == netsim.KindState)
		}
	}
}

// Event writes an events.csv row as a log message: failsafes, collisions
// and rejections as warnings, the rest as information.
func (r *Recorder) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	who := source
	if node >= 0 && int(node) < len(r.run.Nodes) {
		who = r.run.Nodes[node] + "/" + source
	}
	msg := name
	if detail != "" {
		msg += ": " + detail
	}
	level := 2
	switch name {
	case "failsafe", "collision", "rejected", "obstacle_hit", "out_of_bounds":
		level = 3
	}
	r.write(chEvents, -1, t, &logMsg{Timestamp: stampOf(t), Level: level, Message: msg, Name: who})
}

// Close ends the run on every sink (the file's index and summary are
// written); it returns the first error.
func (r *Recorder) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	for _, s := range r.sinks {
		if err := s.End(); err != nil && r.err == nil {
			r.err = err
		}
	}
	return r.err
}
