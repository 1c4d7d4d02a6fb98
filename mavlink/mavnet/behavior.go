package mavnet

import (
	"fmt"
	"net/netip"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/mavlink"
)

// The MAVLink ports over host_veth (isolation: netns): the vehicle's
// autopilot listens on 10.100.i.1:HostPort and sends to
// 10.100.i.2:CompanionPort in the namespace (PX4's onboard ports), where
// MAVSDK (udp://:14540), MAVROS or pymavlink listen by default.
const (
	HostPort      = 14580
	CompanionPort = 14540
)

// Vehicle is the mavlink behaviour with its sockets on the host: a
// mavlink.VehicleBehavior that is also an edge.Component.
type Vehicle struct {
	*mavlink.VehicleBehavior
	ctx      *agent.Context
	hostLink *UDPLink // over host_veth (isolation: netns); Close closes it
	fwLink   fwConn   // to real firmware; Close closes it
}

// Start implements agent.Behavior.
func (v *Vehicle) Start(ctx *agent.Context) error {
	v.ctx = ctx
	return v.VehicleBehavior.Start(ctx)
}

// Open implements edge.Component: on real firmware, it connects the relay
// to the firmware's ground-station link; in a run with network namespaces,
// the vehicle's autopilot is reachable from its namespace over host_veth,
// like a flight controller wired to the companion computer.
func (v *Vehicle) Open(env *edge.Env) error {
	ns := env.Namespace(int(v.ctx.ID()))
	if fw := v.Firmware(); fw != nil {
		if ns != nil {
			return fmt.Errorf("vehicle %d: real firmware inside network namespaces is not supported yet (isolation: netns)", v.ctx.ID())
		}
		l, err := openFirmware(fw)
		if err != nil {
			return fmt.Errorf("vehicle %d: %w", v.ctx.ID(), err)
		}
		v.fwLink = l
		v.AttachFirmware(l)
		return nil
	}
	if ns == nil {
		return nil
	}
	l, err := ListenUDP(netip.AddrPortFrom(ns.HostIP, HostPort), []netip.AddrPort{netip.AddrPortFrom(ns.NSHost, CompanionPort)})
	if err != nil {
		return fmt.Errorf("isolation: MAVLink link of vehicle %d over host_veth: %w", v.ctx.ID(), err)
	}
	v.AttachLink(l)
	v.hostLink = l
	return nil
}

// Close implements edge.Component: it closes the firmware connection or
// the host_veth link.
func (v *Vehicle) Close() error {
	if v.fwLink != nil {
		err := v.fwLink.Close()
		v.fwLink = nil
		v.AttachFirmware(nil)
		return err
	}
	if v.hostLink == nil {
		return nil
	}
	err := v.hostLink.Close()
	v.hostLink = nil
	return err
}

// Gateway is the UDP gateway with its socket on the host: a
// mavlink.Gateway that is also an edge.Component.
type Gateway struct {
	*mavlink.Gateway
	p    *mavlink.GatewayParams
	ctx  *agent.Context
	link *UDPLink
}

// Start implements agent.Behavior.
func (g *Gateway) Start(ctx *agent.Context) error {
	g.ctx = ctx
	return g.Gateway.Start(ctx)
}

// Open implements edge.Component: the UDP socket.
func (g *Gateway) Open(env *edge.Env) error {
	remote := netip.MustParseAddrPort(g.p.Remote)
	l, err := ListenUDP(netip.MustParseAddrPort(g.p.Bind), []netip.AddrPort{remote})
	if err != nil {
		return fmt.Errorf("node %s: MAVLink gateway: %w", g.ctx.Ref().Name, err)
	}
	g.link = l
	g.Attach(l)
	return nil
}

// Close implements edge.Component.
func (g *Gateway) Close() error {
	if g.link == nil {
		return nil
	}
	err := g.link.Close()
	g.link = nil
	g.Attach(nil)
	return err
}

// VehicleSpec is the mavlink behaviour type (type: mavlink).
var VehicleSpec = agent.Spec{
	Name: "mavlink",
	Doc: "Makes the vehicle a MAVLink 2 system like a PX4 autopilot (system id = node id + 1): telemetry streams at PX4's default rates " +
		"(`rates` overrides them by message name), commands, missions and parameters, over the simulated network on `port` " +
		"(to the `gcs` nodes and to whoever talks to it) and over UDP on loopback when the run has --mavlink-udp. " +
		"With `relay`, starting a loiter mission item makes the vehicle's companion computer upload the same mission, moved to the next vehicle's home, " +
		"to the next vehicle of the group, arm it and start it. Frames are logged to mavlink-<node>.tlog.",
	Vehicle: true,
	Params:  func() agent.Params { return mavlink.DefaultVehicleParams() },
	New: func(p agent.Params) agent.Behavior {
		return &Vehicle{VehicleBehavior: mavlink.NewVehicleBehavior(p.(*mavlink.VehicleParams))}
	},
}

// GatewaySpec is the UDP gateway type (type: mavlink_udp).
var GatewaySpec = agent.Spec{
	Name: "mavlink_udp",
	Doc: "Connects a ground station outside skyloop (QGroundControl, MAVSDK, pymavlink) to the vehicles through the simulated network: " +
		"what reaches this fixed node on `port` goes over UDP to `remote` (QGroundControl listens on 127.0.0.1:14550), and each frame " +
		"the ground station sends back goes from this node to the vehicle it targets (every vehicle, or those of `group`, for frames " +
		"without a target). Name the node in the vehicles' mavlink `gcs` lists so that they report to it from the start.",
	Fixed:  true,
	Params: func() agent.Params { return mavlink.DefaultGatewayParams() },
	New: func(p agent.Params) agent.Behavior {
		gp := p.(*mavlink.GatewayParams)
		return &Gateway{Gateway: mavlink.NewGateway(gp), p: gp}
	},
}
