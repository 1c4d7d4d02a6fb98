package mavlink

import (
	"fmt"
	"net/netip"
	"reflect"

	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/sim"
)

// GatewayParams configure the UDP gateway (type: mavlink_udp).
type GatewayParams struct {
	// Port is the in-simulation port of MAVLink traffic (the vehicles'
	// mavlink behaviours use 14550).
	Port uint16 `yaml:"port" json:"port"`
	// Remote is where the external ground station listens
	// (QGroundControl: 127.0.0.1:14550).
	Remote string `yaml:"remote" json:"remote"`
	// Bind is the gateway's own UDP address; port 0 picks a free one.
	Bind string `yaml:"bind" json:"bind"`
	// Group limits the vehicles the gateway reaches to one group; empty
	// means every vehicle.
	Group string `yaml:"group" json:"group"`
	// Period is how often the gateway reads what the ground station sent.
	Period sim.Duration `yaml:"period" json:"period"`
}

// Validate checks the parameters.
func (p *GatewayParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Port == 0 {
		bad["port"] = "must be a port number 1-65535"
	}
	if a, err := netip.ParseAddrPort(p.Remote); err != nil || a.Port() == 0 {
		bad["remote"] = fmt.Sprintf("want an address and port such as 127.0.0.1:14550, got %q", p.Remote)
	}
	if _, err := netip.ParseAddrPort(p.Bind); err != nil {
		bad["bind"] = fmt.Sprintf("want an address and port such as 127.0.0.1:0, got %q", p.Bind)
	}
	if p.Period <= 0 {
		bad["period"] = fmt.Sprintf("must be a positive duration, got %v", p.Period)
	}
	return bad
}

// Gateway connects a ground station outside skyloop (QGroundControl, a
// MAVSDK or pymavlink program) to the vehicles through the simulated
// network: it sits on a fixed node, sends what reaches that node on the
// MAVLink port to the ground station over UDP, and sends each frame the
// ground station sends from that node to the vehicle it is addressed to
// (target_system = node id + 1; frames for every system, such as its
// heartbeats, to every vehicle), so that loss, delay and collisions hit
// the ground station's traffic as they hit the simulated ones. It works
// with the stand-in and with real PX4 (whose mavlink behaviour relays).
// It opens nothing itself: package mavnet's Gateway opens its UDP socket
// and attaches it.
type Gateway struct {
	p        *GatewayParams
	ctx      *agent.Context
	vehicles []netsim.NodeID
	link     Link
	dec      *Decoder
	// In and Out count frames from and datagrams to the ground station;
	// Unroutable counts frames for systems that are not vehicles here.
	In, Out, Unroutable int
	errs                int
}

// check reports what Start refuses: a group that does not exist.
func (g *Gateway) check(ctx *agent.Context) error {
	if g.p.Group != "" && len(ctx.Group(g.p.Group)) == 0 {
		return fields.Errors{"group": fmt.Sprintf("no vehicle group named %q", g.p.Group)}.Err("")
	}
	return nil
}

// Start implements agent.Behavior.
func (g *Gateway) Start(ctx *agent.Context) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	g.ctx = ctx
	if g.p.Group != "" {
		g.vehicles = ctx.Group(g.p.Group)
	} else {
		for _, n := range ctx.Nodes() {
			if n.Group != "" { // vehicles belong to groups, fixed nodes do not
				g.vehicles = append(g.vehicles, n.ID)
			}
		}
	}
	g.dec = NewDecoder()
	return nil
}

// NewGateway returns the gateway with parameters p.
func NewGateway(p *GatewayParams) *Gateway { return &Gateway{p: p} }

// Attach sets the link to the ground station (nil: none; frames for it
// are dropped).
func (g *Gateway) Attach(l Link) { g.link = l }

// Schedule implements agent.Behavior.
func (g *Gateway) Schedule() (period, offset sim.Duration) { return g.p.Period, 0 }

// Step implements agent.Behavior: frames from the ground station go to
// their vehicles.
func (g *Gateway) Step(ctx *agent.Context) {
	if g.link == nil {
		return
	}
	err := g.link.Drain(func(_ int32, data []byte) {
		g.dec.DecodeRaw(data, func(raw []byte, f frame.Frame) {
			g.In++
			target, ok := targetSystem(f)
			if !ok || target == 0 {
				for _, v := range g.vehicles {
					g.send(v, raw)
				}
				return
			}
			id := netsim.NodeID(int(target) - 1)
			for _, v := range g.vehicles {
				if v == id {
					g.send(v, raw)
					return
				}
			}
			g.Unroutable++
		})
	})
	if err != nil && g.errs == 0 {
		g.errs++
		ctx.Log().Warn("MAVLink gateway: reading from the ground station failed", "err", err)
	}
}

func (g *Gateway) send(dst netsim.NodeID, raw []byte) {
	if err := g.ctx.Send(agent.Message{Dst: dst, Port: g.p.Port, Kind: KindMAVLink, Payload: raw}); err != nil {
		g.ctx.Log().Warn("MAVLink gateway: send failed", "dst", dst, "err", err)
	}
}

// Receive implements agent.Receiver: what the vehicles send to this node
// goes to the ground station.
func (g *Gateway) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Port != g.p.Port || g.link == nil {
		return
	}
	g.link.Broadcast(m.Payload)
	g.Out++
}

// Finish implements agent.Finisher.
func (g *Gateway) Finish(ctx *agent.Context) map[string]any {
	return map[string]any{"frames_from_ground_station": g.In, "datagrams_to_ground_station": g.Out,
		"unroutable_frames": g.Unroutable, "bad_frames": g.dec.Bad}
}

// targetSystem returns the target_system field of the frame's message, if
// it has one.
func targetSystem(f frame.Frame) (uint8, bool) {
	v := reflect.ValueOf(f.GetMessage())
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	fv := v.Elem().FieldByName("TargetSystem")
	if !fv.IsValid() || fv.Kind() != reflect.Uint8 {
		return 0, false
	}
	return uint8(fv.Uint()), true
}

// DefaultGatewayParams returns the gateway's defaults.
func DefaultGatewayParams() *GatewayParams {
	return &GatewayParams{Port: 14550, Remote: "127.0.0.1:14550", Bind: "127.0.0.1:0", Period: 10 * sim.Millisecond}
}
