package mavlink

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/agent"
	"skyloop/behavior"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// KindMAVLink labels MAVLink packets in traces and metrics.
const KindMAVLink = netsim.KindMAVLink

// DefaultEpoch is the wall-clock time of simulated time zero in telemetry
// logs and GPS time, fixed so that outputs are reproducible.
const DefaultEpoch = "2026-01-01T00:00:00Z"

// VehicleParams configure the vehicle behaviour.
type VehicleParams struct {
	Port   uint16             `yaml:"port" json:"port"`     // in-simulation port of MAVLink traffic
	GCS    []string           `yaml:"gcs" json:"gcs"`       // nodes that get telemetry before they talk to the vehicle
	Rates  map[string]float64 `yaml:"rates" json:"rates"`   // stream rates (Hz) by message name; 0 turns one off
	Period sim.Duration       `yaml:"period" json:"period"` // how often the endpoint runs (streams, missions)
	Relay  bool               `yaml:"relay" json:"relay"`   // on starting a loiter item, hand the mission to the next vehicle of the group
	Retry  sim.Duration       `yaml:"retry" json:"retry"`   // resend period of the relay's commands
	Tlog   bool               `yaml:"tlog" json:"tlog"`     // write mavlink-<node>.tlog
	Epoch  string             `yaml:"epoch" json:"epoch"`   // RFC 3339 time of simulated time zero
}

// Validate checks the parameters.
func (p *VehicleParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Port == 0 {
		bad["port"] = "must be a port number 1-65535"
	}
	for name, hz := range p.Rates {
		if _, ok := StreamNames[name]; !ok {
			names := make([]string, 0, len(StreamNames))
			for n := range StreamNames {
				names = append(names, n)
			}
			sort.Strings(names)
			bad["rates."+name] = "unknown stream; want one of " + strings.Join(names, ", ")
		} else if !(hz >= 0 && hz <= 1000) {
			bad["rates."+name] = fmt.Sprintf("must be in [0, 1000] Hz, got %v", hz)
		}
	}
	if p.Period <= 0 {
		bad["period"] = fmt.Sprintf("must be a positive duration, got %v", p.Period)
	}
	if p.Retry <= 0 {
		bad["retry"] = fmt.Sprintf("must be a positive duration, got %v", p.Retry)
	}
	if _, err := time.Parse(time.RFC3339, p.Epoch); err != nil {
		bad["epoch"] = fmt.Sprintf("must be an RFC 3339 time such as %s: %v", DefaultEpoch, err)
	}
	return bad
}

// tlogWriter writes a QGroundControl telemetry log: every frame preceded by
// its time as a 64-bit big-endian count of microseconds since 1970.
type tlogWriter struct {
	w       io.Writer
	epochUs int64
	buf     []byte
	dec     *Decoder // splits received datagrams into frames
}

// writeFrames writes every valid frame of a received datagram, each with
// its own timestamp, and skips what is not a frame: readers of the format
// (QGroundControl, pymavlink) expect exactly one frame per record.
func (t *tlogWriter) writeFrames(now sim.Time, data []byte) {
	if t == nil || t.w == nil {
		return
	}
	if t.dec == nil {
		t.dec = NewDecoder()
	}
	t.dec.DecodeRaw(data, func(raw []byte, _ frame.Frame) { t.write(now, raw) })
}

func (t *tlogWriter) write(now sim.Time, data []byte) {
	if t == nil || t.w == nil {
		return
	}
	t.buf = binary.BigEndian.AppendUint64(t.buf[:0], uint64(t.epochUs+int64(now)/1000))
	t.buf = append(t.buf, data...)
	t.w.Write(t.buf) //nolint:errcheck // the run directory reports write errors when it closes
}

// Link is an external transport attached to a vehicle or a gateway: in
// real-time runs and over host_veth, one of package mavnet's UDP sockets.
// Frames from it enter the run only when it is drained, at the
// behaviour's steps.
type Link interface {
	// Drain hands every datagram received since the last call to fn, in
	// arrival order; from numbers the sender for Send.
	Drain(fn func(from int32, data []byte)) error
	// Send sends a frame to sender addr (a from of Drain).
	Send(addr int32, frame []byte)
	// Broadcast sends a frame to the link's default targets and to every
	// sender heard.
	Broadcast(frame []byte)
}

// VehicleBehavior runs a vehicle's MAVLink endpoint over the simulated
// network (and over the links attached to it). It opens nothing itself:
// package mavnet's Vehicle opens its sockets on the host.
type VehicleBehavior struct {
	p        *VehicleParams
	ctx      *agent.Context
	ep       *Vehicle
	dec      *Decoder
	peers    []netsim.NodeID // in-simulation peers: configured stations, then whoever talked
	links    []Link
	tlog     *tlogWriter
	opened   bool
	epochUs  int64
	relay    *Client
	relayTo  netsim.NodeID
	relayed  bool
	linkErrs int

	// Real firmware (relay mode): the vehicle's controller is a flight
	// stack in another process, which speaks MAVLink itself; the
	// behaviour carries its ground-station link through the network.
	fw     any // Firmware or FirmwareTCP
	fwLink FirmwareLink
	// With relay, on real firmware: the mission the ground station
	// uploaded (seen passing through), and the home it is relative to.
	fwMission []common.MessageMissionItemInt
	fwHome    geom.Vec3
	fwBuf     []byte
	fwIn      int // datagrams from the firmware
	fwOut     int // datagrams to the firmware
	// The firmware's flight mode, from its heartbeats passing through:
	// changes become "mode" events, as the stand-in's controller logs.
	fwHB     *Decoder // decodes the heartbeats only
	fwMode   uint32   // custom_mode
	fwAP     common.MAV_AUTOPILOT
	fwModeOK bool
	// With a firmware whose controller cannot see arming
	// (ArmingInHeartbeats): whether its heartbeats say it is armed.
	fwArmLog bool
	fwArmed  bool
}

// NewVehicleBehavior returns the behaviour with parameters p.
func NewVehicleBehavior(p *VehicleParams) *VehicleBehavior { return &VehicleBehavior{p: p} }

// AttachLink adds an external link; frames from it are handled at the
// behaviour's steps.
func (b *VehicleBehavior) AttachLink(l Link) { b.links = append(b.links, l) }

// Firmware returns the real firmware flying the vehicle (a Firmware or a
// FirmwareTCP), found at Start, or nil.
func (b *VehicleBehavior) Firmware() any { return b.fw }

// AttachFirmware sets the relay's connection to the firmware (nil: none;
// frames to the firmware are dropped).
func (b *VehicleBehavior) AttachFirmware(l FirmwareLink) { b.fwLink = l }

// Endpoint returns the vehicle endpoint (after Start).
func (b *VehicleBehavior) Endpoint() *Vehicle { return b.ep }

type autopilotOf struct{ ctx *agent.Context }

func (a autopilotOf) Estimate() vehicle.Telemetry { return a.ctx.Telemetry() }
func (a autopilotOf) Command(c vehicle.Command)   { a.ctx.Command(c) }

// gcsNodes returns the nodes of the ground stations the vehicle reports to.
func (b *VehicleBehavior) gcsNodes(ctx *agent.Context) ([]netsim.NodeID, error) {
	var peers []netsim.NodeID
	for i, name := range b.p.GCS {
		found := false
		for _, n := range ctx.Nodes() {
			if n.Name == name {
				peers = append(peers, n.ID)
				found = true
			}
		}
		if !found {
			return nil, fields.Errors{fmt.Sprintf("gcs[%d]", i): fmt.Sprintf("no node named %q", name)}.Err("")
		}
	}
	return peers, nil
}

// check reports what Start refuses: the vehicle needs a MAVLink system id and
// its ground stations must exist.
func (b *VehicleBehavior) check(ctx *agent.Context) error {
	if id := ctx.ID(); id > 249 {
		return fmt.Errorf("MAVLink system ids run out: at most 250 vehicles can speak MAVLink (node id %d)", id)
	}
	_, err := b.gcsNodes(ctx)
	return err
}

// Start implements agent.Behavior.
func (b *VehicleBehavior) Start(ctx *agent.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	b.ctx = ctx
	id := ctx.ID()
	b.peers, _ = b.gcsNodes(ctx)
	ep, _ := time.Parse(time.RFC3339, b.p.Epoch)
	b.epochUs = ep.UnixMicro()
	if fw, ok := agent.Capability[FirmwareTCP](ctx); ok {
		b.fw = fw
	} else if fw, ok := agent.Capability[Firmware](ctx); ok {
		b.fw = fw
	}
	if b.fw != nil {
		b.dec = NewDecoder()
		b.fwHB = NewDecoder()
		b.fwHB.Want = func(id uint32) bool { return id == idHeartbeat }
		if a, ok := agent.Capability[ArmingInHeartbeats](ctx); ok {
			b.fwArmLog = a.ArmingInHeartbeats()
		}
		b.fwHome = ctx.Telemetry().Pos
		if b.p.Relay {
			group := ctx.Group(ctx.Ref().Group)
			if idx := ctx.Ref().Index; idx+1 < len(group) {
				b.relayTo = group[idx+1]
				b.relay = NewClient(uint8(id+1), uint8(common.MAV_COMP_ID_ONBOARD_COMPUTER), uint8(b.relayTo+1), ctx.Origin(),
					b.p.Retry, common.MAV_TYPE_ONBOARD_CONTROLLER, relayHost{b})
				b.relay.ReadyTimeout = DefaultReadyTimeout
			}
		}
		return nil
	}
	rates := map[uint32]float64{}
	for name, hz := range b.p.Rates {
		rates[StreamNames[name]] = hz
	}
	var tun Tunable
	if t, ok := agent.Capability[Tunable](ctx); ok {
		tun = t
	}
	cfg := VehicleConfig{SysID: uint8(id + 1), Origin: ctx.Origin(), Home: ctx.Telemetry().Pos, Rates: rates, EpochUs: b.epochUs}
	b.ep = NewVehicle(cfg, autopilotOf{ctx}, tun, vehicleHost{b})
	b.dec = NewDecoder()
	b.dec.Want = VehicleWants
	if b.p.Relay {
		group := ctx.Group(ctx.Ref().Group)
		if idx := ctx.Ref().Index; idx+1 < len(group) {
			b.relayTo = group[idx+1]
			b.relay = NewClient(uint8(id+1), uint8(common.MAV_COMP_ID_ONBOARD_COMPUTER), uint8(b.relayTo+1), ctx.Origin(),
				b.p.Retry, common.MAV_TYPE_ONBOARD_CONTROLLER, relayHost{b})
			b.relay.ReadyTimeout = DefaultReadyTimeout
			b.ep.OnLoiter = b.startRelay
			// The next vehicle is a stand-in too (a group shares its
			// controller), which reports no pre-arm checks and streams no
			// HOME_POSITION: the relay reads what it needs to fly, and
			// the endpoint gets no SYS_STATUS of other vehicles to count.
			b.dec.Want = func(id uint32) bool { return VehicleWants(id) || flightWants(id) }
		}
	}
	return nil
}

// Schedule implements agent.Behavior.
func (b *VehicleBehavior) Schedule() (period, offset sim.Duration) { return b.p.Period, 0 }

func (b *VehicleBehavior) open() {
	if b.opened {
		return
	}
	b.opened = true
	if !b.p.Tlog {
		return
	}
	w, err := b.ctx.File("mavlink-" + b.ctx.Ref().Name + ".tlog")
	if err != nil {
		// Asked for and not possible: the run must not end without it.
		b.ctx.Fail(fmt.Errorf("telemetry log: %w", err))
		return
	}
	b.tlog = &tlogWriter{w: w, epochUs: b.epochUs}
}

// Step implements agent.Behavior: external frames, then the endpoint and
// the relay.
func (b *VehicleBehavior) Step(ctx *agent.Context) {
	b.open()
	now := ctx.Now()
	if b.fw != nil {
		b.relayStep(now)
		return
	}
	for i, l := range b.links {
		err := l.Drain(func(from int32, data []byte) {
			b.tlog.writeFrames(now, data)
			b.dec.Decode(data, func(f frame.Frame) { b.dispatch(now, Peer{Link: int32(i + 1), Addr: from}, f) })
		})
		if err != nil && b.linkErrs == 0 {
			b.linkErrs++
			ctx.Log().Warn("MAVLink link failed", "err", err)
		}
	}
	b.ep.Step(now)
	if b.relay != nil {
		b.relay.Step(now)
	}
}

// Receive implements agent.Receiver.
func (b *VehicleBehavior) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Port != b.p.Port {
		return
	}
	b.open()
	now := ctx.Now()
	b.tlog.writeFrames(now, m.Payload)
	if b.fw != nil {
		b.toFirmware(now, m)
		return
	}
	b.dec.Decode(m.Payload, func(f frame.Frame) { b.dispatch(now, Peer{Link: 0, Addr: int32(m.Src)}, f) })
}

// maxMissionItems bounds the mission the relay keeps for handing on.
const maxMissionItems = 1000

// toFirmware passes what reached the node to the firmware. With relay,
// the next vehicle's answers to this vehicle's companion go to the relay
// client instead, and the mission uploaded to the firmware is kept for
// handing on.
func (b *VehicleBehavior) toFirmware(now sim.Time, m *agent.Message) {
	if b.relay == nil {
		b.addPeer(m.Src)
		if b.fwLink != nil {
			b.fwLink.Write(m.Payload)
			b.fwOut++
		}
		return
	}
	b.fwBuf = b.fwBuf[:0]
	b.dec.DecodeRaw(m.Payload, func(raw []byte, f frame.Frame) {
		if f.GetSystemID() == b.relay.Target() {
			b.relay.Handle(now, f)
			return
		}
		switch it := f.GetMessage().(type) {
		case *common.MessageMissionCount:
			if it.MissionType == common.MAV_MISSION_TYPE_MISSION && int(it.Count) <= maxMissionItems {
				b.fwMission = make([]common.MessageMissionItemInt, it.Count)
			}
		case *common.MessageMissionItemInt:
			if it.MissionType == common.MAV_MISSION_TYPE_MISSION && int(it.Seq) < len(b.fwMission) {
				b.fwMission[it.Seq] = *it
			}
		case *common.MessageMissionItem: // the legacy form, which ArduPilot asks for
			if it.MissionType == common.MAV_MISSION_TYPE_MISSION && int(it.Seq) < len(b.fwMission) {
				b.fwMission[it.Seq] = fromFloat(it)
			}
		}
		b.fwBuf = append(b.fwBuf, raw...)
	})
	if len(b.fwBuf) == 0 {
		return
	}
	b.addPeer(m.Src)
	if b.fwLink != nil {
		b.fwLink.Write(b.fwBuf)
		b.fwOut++
	}
}

// watchFirmware starts the hand-on when the firmware reports that it
// flies the mission's loiter item.
func (b *VehicleBehavior) watchFirmware(now sim.Time, data []byte) {
	b.dec.Decode(data, func(f frame.Frame) {
		cur, ok := f.GetMessage().(*common.MessageMissionCurrent)
		if !ok || int(cur.Seq) >= len(b.fwMission) || b.relayed {
			return
		}
		if b.fwMission[cur.Seq].Command == common.MAV_CMD_NAV_LOITER_TIME {
			b.startFirmwareRelay(now)
		}
	})
}

// startFirmwareRelay hands the mission on to the next vehicle, as
// startRelay does for the stand-in: the kept mission moved to the next
// vehicle's home, started as its autopilot needs (startOps).
func (b *VehicleBehavior) startFirmwareRelay(now sim.Time) {
	b.relayed = true
	alt := float32(0)
	for _, it := range b.fwMission {
		if it.Command == common.MAV_CMD_NAV_TAKEOFF {
			alt = it.Z
			break
		}
	}
	home := b.fwHome
	b.relay.Add(Op{Kind: OpConnect, Name: "connect"},
		Op{Kind: OpUpload, Name: "upload", Raw: b.fwMission, Shift: func(c *Client) geom.Vec3 { return c.Home.Sub(home) }})
	b.relay.Add(startOps(alt)...)
	b.ctx.Event("relay", fmt.Sprintf("handing the mission to system %d", b.relay.Target()))
}

// watchMode logs a "mode" event ("AUTO.LOITER->AUTO.TAKEOFF", the
// stand-in's from->to form) when the custom mode in the firmware's
// heartbeats changes; the first heartbeat sets the mode without an event.
// Only the autopilot's heartbeats count (component 1, an autopilot type):
// a camera or a companion on the same link has no flight mode. For
// firmware whose controller cannot see arming (ArmingInHeartbeats), a
// change of the safety-armed flag is an "armed" or "disarmed" event,
// named after the autopilot as the controllers name theirs.

func (b *VehicleBehavior) watchMode(data []byte) {
	b.fwHB.Decode(data, func(f frame.Frame) {
		hb, ok := f.GetMessage().(*common.MessageHeartbeat)
		if !ok || f.GetComponentID() != 1 || hb.Autopilot == common.MAV_AUTOPILOT_INVALID {
			return
		}
		if b.fwModeOK && (hb.CustomMode != b.fwMode || hb.Autopilot != b.fwAP) {
			b.ctx.Event("mode", ModeName(b.fwAP, b.fwMode)+"->"+ModeName(hb.Autopilot, hb.CustomMode))
		}
		b.fwMode, b.fwAP, b.fwModeOK = hb.CustomMode, hb.Autopilot, true
		if armed := hb.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0; b.fwArmLog && armed != b.fwArmed {
			b.fwArmed = armed
			name := "disarmed"
			if armed {
				name = "armed"
			}
			b.ctx.Event(name, autopilotName(hb.Autopilot))
		}
	})
}

func (b *VehicleBehavior) addPeer(n netsim.NodeID) {
	for _, p := range b.peers {
		if p == n {
			return
		}
	}
	b.peers = append(b.peers, n)
}

// relayMTU bounds the packets the relay sends: an Ethernet frame's IP
// payload less the IP and UDP headers.
const relayMTU = 1472

// relayStep sends what the firmware sent to the ground stations.
func (b *VehicleBehavior) relayStep(now sim.Time) {
	if b.fwLink == nil {
		return
	}
	if b.relay != nil {
		b.relay.Step(now)
	}
	err := b.fwLink.Drain(func(data []byte) {
		b.fwIn++
		b.tlog.writeFrames(now, data)
		b.watchMode(data)
		if b.relay != nil {
			b.watchFirmware(now, data)
		}
		// Packets of whole frames, at most relayMTU bytes each (a frame
		// longer than that goes alone).
		for len(data) > 0 {
			n := 0
			for n < len(data) {
				l := FrameLen(data[n:])
				if l == 0 || n+l > len(data) {
					l = len(data) - n // not a frame: the rest as it is
				}
				if n > 0 && n+l > relayMTU {
					break
				}
				n += l
			}
			for _, p := range b.peers {
				b.sendNode(p, data[:n])
			}
			data = data[n:]
		}
	})
	if err != nil && b.linkErrs == 0 {
		b.linkErrs++
		b.ctx.Log().Warn("MAVLink relay to the firmware failed", "err", err)
	}
}

func (b *VehicleBehavior) dispatch(now sim.Time, from Peer, f frame.Frame) {
	if from.Link == 0 {
		known := false
		for _, p := range b.peers {
			known = known || p == netsim.NodeID(from.Addr)
		}
		if !known {
			b.peers = append(b.peers, netsim.NodeID(from.Addr))
		}
	}
	if b.relay != nil && f.GetSystemID() == b.relay.Target() {
		b.relay.Handle(now, f)
		return
	}
	b.ep.Handle(now, from, f)
}

// startRelay hands this vehicle's mission to the next one: connect, upload
// the mission moved to the next vehicle's home, arm, start.
func (b *VehicleBehavior) startRelay(now sim.Time) {
	if b.relayed {
		return
	}
	b.relayed = true
	home := b.ep.Home()
	b.relay.Add(
		Op{Kind: OpConnect, Name: "connect"},
		Op{Kind: OpUpload, Name: "upload", Raw: b.ep.Mission(), Shift: func(c *Client) geom.Vec3 { return c.Home.Sub(home) }},
		Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
		Op{Kind: OpCommand, Name: "mission_start", Cmd: common.MAV_CMD_MISSION_START},
	)
	b.ctx.Event("relay", fmt.Sprintf("handing the mission to system %d", b.relay.Target()))
}

// Finish implements agent.Finisher.
func (b *VehicleBehavior) Finish(ctx *agent.Context) map[string]any {
	if b.fw != nil {
		out := map[string]any{"relay_to_firmware": true, "system_id": ctx.ID() + 1, "datagrams_from_firmware": b.fwIn, "datagrams_to_firmware": b.fwOut}
		if b.relay != nil && b.relayed {
			out["relay"] = results(b.relay)
		}
		return out
	}
	out := map[string]any{"system_id": b.ep.SysID(), "frames_in": b.ep.FramesIn, "frames_out": b.ep.FramesOut,
		"commands": b.ep.Commands, "bad_frames": b.dec.Bad, "unknown_frames": b.dec.Unknown, "skipped_frames": b.dec.Skipped}
	ms := map[string]float64{}
	for k, t := range b.ep.Milestones {
		ms[k] = t.Seconds()
	}
	out["milestones_s"] = ms
	if b.relay != nil && b.relayed {
		out["relay"] = results(b.relay)
	}
	return out
}

func results(c *Client) map[string]any {
	ops := map[string]any{}
	for _, r := range c.Results {
		ops[r.Name] = map[string]any{"start_s": r.Start.Seconds(), "end_s": r.End.Seconds(), "attempts": r.Attempts, "ok": r.OK}
	}
	return map[string]any{"system_id": c.Target(), "ops": ops, "complete": c.Done() && !c.Failed}
}

// vehicleHost connects the endpoint to the network and the links.
type vehicleHost struct{ b *VehicleBehavior }

func (h vehicleHost) Send(to Peer, fr []byte) {
	b := h.b
	b.tlog.write(b.ctx.Now(), fr)
	if to.Link == 0 {
		b.sendNode(netsim.NodeID(to.Addr), fr)
		return
	}
	b.links[to.Link-1].Send(to.Addr, fr)
}

func (h vehicleHost) Broadcast(fr []byte) {
	b := h.b
	b.tlog.write(b.ctx.Now(), fr)
	for _, p := range b.peers {
		b.sendNode(p, fr)
	}
	for _, l := range b.links {
		l.Broadcast(fr)
	}
}

func (h vehicleHost) Event(name, detail string) { h.b.ctx.Event(name, detail) }

func (b *VehicleBehavior) sendNode(dst netsim.NodeID, fr []byte) {
	if err := b.ctx.Send(agent.Message{Dst: dst, Port: b.p.Port, Kind: KindMAVLink, Payload: fr}); err != nil {
		b.ctx.Log().Warn("MAVLink send failed", "dst", dst, "err", err)
	}
}

type relayHost struct{ b *VehicleBehavior }

func (h relayHost) Send(fr []byte) {
	b := h.b
	b.tlog.write(b.ctx.Now(), fr)
	b.sendNode(b.relayTo, fr)
}

func (h relayHost) Event(name, detail string) { h.b.ctx.Event(name, detail) }

// DefaultVehicleParams returns the mavlink behaviour's defaults.
func DefaultVehicleParams() *VehicleParams {
	return &VehicleParams{Port: 14550, Period: 10 * sim.Millisecond, Retry: sim.Second, Tlog: true, Epoch: DefaultEpoch}
}

// GCSSpec is the scripted ground station type (type: mavlink_gcs).
var GCSSpec = agent.Spec{
	Name: "mavlink_gcs",
	Doc: "A scripted MAVLink ground station (system id `system_id`) on a fixed node: from `start`, for each vehicle of `group` " +
		"(or the group indices in `vehicles`) it connects (heartbeats until it hears a position), writes `params`, uploads `mission` " +
		"(items relative to each vehicle's home; or, with a `coverage` area, the coverage behaviour's plan as takeoff, waypoints at the turn points and `final`), waits until the vehicle is ready to arm (heard, home set, pre-arm checks passed when its SYS_STATUS reports them; the run fails after `ready_timeout`), arms and starts the mission, then waits until the vehicle has landed and disarmed. " +
		"Every command and mission transfer is resent after `retry` until acknowledged, so it completes over lossy links.",
	Fixed:   true,
	Vehicle: true,
	Params: func() agent.Params {
		return &GCSParams{Port: 14550, SystemID: 255, Period: 10 * sim.Millisecond, Retry: sim.Second, ReadyTimeout: DefaultReadyTimeout,
			Coverage: behavior.DefaultCoverageParams()}
	},
	New: func(p agent.Params) agent.Behavior { return &GCSBehavior{p: p.(*GCSParams)} },
}
