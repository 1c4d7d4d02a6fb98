// Package foxglove writes a run as an MCAP file (github.com/foxglove/mcap)
// that Foxglove opens as it opens a robot's log: vehicles as frames
// (foxglove.FrameTransform on /tf) drawn as boxes with the world's
// obstacles (foxglove.SceneUpdate on /scene), geodetic positions for the
// Map panel (foxglove.LocationFix on /vehicles/NAME/fix), each vehicle's
// telemetry (/vehicles/NAME/telemetry), every network event
// (/network/events) and events.csv's rows (foxglove.Log on /events). The
// messages are JSON with JSON Schemas; log times are simulated
// nanoseconds, so the same run gives the same file byte for byte.
package foxglove

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/foxglove/mcap/go/mcap"

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
	// Scenario and Seed go into the file's metadata.
	Scenario string
	Seed     uint64
}

// Writer writes run.mcap. Its methods match the engine's recorder hooks;
// it is not safe for concurrent use. The first error stops writing and
// is returned by Close.
type Writer struct {
	w      *mcap.Writer
	run    Run
	tel    []uint16 // per vehicle: telemetry channel
	fix    []uint16 // per vehicle: location fix channel
	seq    uint32
	err    error
	closed bool
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

// NewWriter starts run.mcap on out: header, schemas, channels, the run's
// metadata and the scene (the obstacles, and a box per vehicle that
// follows its frame).
func NewWriter(out io.Writer, run Run) (*Writer, error) {
	if run.Vehicles < 0 || run.Vehicles > len(run.Nodes) {
		return nil, fmt.Errorf("foxglove: %d vehicles among %d nodes", run.Vehicles, len(run.Nodes))
	}
	if int(chFirstVehicle)+2*run.Vehicles > math.MaxUint16 {
		return nil, fmt.Errorf("foxglove: %d vehicles are more than an MCAP file's channels can hold", run.Vehicles)
	}
	mw, err := mcap.NewWriter(out, &mcap.WriterOptions{Chunked: true, ChunkSize: 1 << 20, Compression: mcap.CompressionNone, IncludeCRC: true})
	if err != nil {
		return nil, fmt.Errorf("foxglove: %w", err)
	}
	w := &Writer{w: mw, run: run}
	w.try(mw.WriteHeader(&mcap.Header{Profile: "", Library: "skyloop"}))
	for _, s := range []struct {
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
	} {
		w.try(mw.WriteSchema(&mcap.Schema{ID: s.id, Name: s.name, Encoding: "jsonschema", Data: []byte(s.data)}))
	}
	channel := func(id, schema uint16, topic string) {
		w.try(mw.WriteChannel(&mcap.Channel{ID: id, SchemaID: schema, Topic: topic, MessageEncoding: "json", Metadata: map[string]string{}}))
	}
	channel(chTF, schFrameTransform, TopicTF)
	channel(chScene, schSceneUpdate, TopicScene)
	channel(chNetwork, schNetworkEvent, TopicNetwork)
	channel(chEvents, schLog, TopicEvents)
	for i := 0; i < run.Vehicles; i++ {
		t, f := chFirstVehicle+uint16(2*i), chFirstVehicle+uint16(2*i+1)
		w.tel, w.fix = append(w.tel, t), append(w.fix, f)
		channel(t, schTelemetry, TelemetryTopic(run.Nodes[i]))
		channel(f, schLocationFix, FixTopic(run.Nodes[i]))
	}
	w.try(mw.WriteMetadata(&mcap.Metadata{Name: "skyloop", Metadata: map[string]string{
		"scenario": run.Scenario, "seed": strconv.FormatUint(run.Seed, 10), "vehicles": strconv.Itoa(run.Vehicles),
		"origin": fmt.Sprintf("%.7f,%.7f,%.2f", run.Origin.Lat, run.Origin.Lon, run.Origin.Alt)}}))
	w.scene()
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

func (w *Writer) try(err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("foxglove: writing run.mcap: %w", err)
	}
}

// write appends message v on channel ch at time t.
func (w *Writer) write(ch uint16, t sim.Time, v any) {
	if w.err != nil || w.closed {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.try(err)
		return
	}
	w.seq++
	ns := uint64(max(t, 0))
	w.try(w.w.WriteMessage(&mcap.Message{ChannelID: ch, Sequence: w.seq, LogTime: ns, PublishTime: ns, Data: b}))
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
func (w *Writer) scene() {
	var up sceneUpdate
	up.Deletions = []struct{}{}
	world := entity{FrameID: WorldFrame, ID: "world", Metadata: []keyValue{}, Cubes: []cube{}}
	for _, b := range w.run.Boxes {
		c := b.Min.Add(b.Max).Scale(0.5)
		world.Cubes = append(world.Cubes, cube{Pose: pose{Position: v3(c), Orientation: q4(geom.Identity)},
			Size: v3(b.Max.Sub(b.Min)), Color: color{R: 0.55, G: 0.55, B: 0.6, A: 0.6}})
		world.Metadata = append(world.Metadata, keyValue{Key: "obstacle", Value: b.Name})
	}
	up.Entities = append(up.Entities, world)
	for i := 0; i < w.run.Vehicles; i++ {
		name := w.run.Nodes[i]
		up.Entities = append(up.Entities, entity{FrameID: name, ID: "vehicle/" + name, FrameLocked: true,
			Metadata: []keyValue{{Key: "id", Value: strconv.Itoa(i)}},
			Cubes: []cube{{Pose: pose{Orientation: q4(geom.Identity)}, Size: vec3{0.5, 0.5, 0.15},
				Color: color{R: 0.1, G: 0.45, B: 0.85, A: 1}}}})
	}
	w.write(chScene, 0, &up)
}

// Vehicle writes vehicle id's sample at t: its frame, its telemetry and
// its geodetic position.
func (w *Writer) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	if id < 0 || id >= w.run.Vehicles {
		return
	}
	name := w.run.Nodes[id]
	ts := stampOf(t)
	att := geom.FromEuler(tel.Roll, tel.Pitch, tel.Yaw)
	w.write(chTF, t, &frameTransform{Timestamp: ts, Parent: WorldFrame, Child: name, Translation: v3(tel.Pos), Rotation: q4(att)})
	w.write(w.tel[id], t, &telemetry{Timestamp: ts, ID: id, Name: name, Position: v3(tel.Pos), Velocity: v3(tel.Vel),
		Roll: num(tel.Roll), Pitch: num(tel.Pitch), Yaw: num(tel.Yaw), Speed: num(tel.Vel.Norm()), Mode: tel.Mode.String(),
		Armed: tel.Armed, Landed: tel.Landed, Energy: num(tel.Energy), Distance: num(tel.Distance),
		BatteryV: num(tel.BatteryV), CurrentA: num(tel.BatteryA), Remaining: num(tel.BatteryRemaining)})
	g := w.run.Origin.ToGeodetic(tel.Pos)
	w.write(w.fix[id], t, &locationFix{Timestamp: ts, FrameID: name, Latitude: num(g.Lat), Longitude: num(g.Lon), Altitude: num(g.Alt)})
}

// Trace writes a network event.
func (w *Writer) Trace(e *netsim.TraceEvent) {
	p := e.P
	ev := networkEvent{Timestamp: stampOf(e.T), Event: e.Type.String(), Src: int64(p.Src), Dst: int64(p.Dst), Node: int64(e.Node),
		Seq: uint64(p.Seq), TGen: int64(p.TGen), Bytes: p.Size, Kind: p.Kind.String(), RxDbm: num(e.RxPower)}
	if e.Type == netsim.EvDrop {
		ev.Reason = e.Reason.String()
	}
	w.write(chNetwork, e.T, &ev)
}

// Event writes an events.csv row as a log message: failsafes, collisions
// and rejections as warnings, the rest as information.
func (w *Writer) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	who := source
	if node >= 0 && int(node) < len(w.run.Nodes) {
		who = w.run.Nodes[node] + "/" + source
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
	w.write(chEvents, t, &logMsg{Timestamp: stampOf(t), Level: level, Message: msg, Name: who})
}

// Close writes the file's index and summary; it returns the first error
// met while writing.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if err := w.w.Close(); err != nil {
		w.try(err)
	}
	return w.err
}
