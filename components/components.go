// Package components assembles the registry of every component skyloop
// ships with: the core's (engine.Core: vehicle kinds, the behaviours of
// package agent, the ideal and impair backends) and the others: the wifi
// model with its pcap captures (written by netsim/pcap, through gopacket),
// the ns3 and extern backends, the extern and MAVLink behaviours, the TAP
// bridge of isolation: netns, real PX4 and ArduPilot firmware as
// multirotor controllers (px4-sitl, ardupilot-sitl), the ROS 2 bridge
// (ros2, over Cyclone DDS loaded at run time), and MuJoCo's library
// and model files (mjlib) for the kinds that step in MuJoCo.
// Programs that build runs from scenario files pass it to the engine:
//
//	reg := components.Registry()
//	sc, err := scenariofile.Load(path, reg.Schema())
//	r, err := engine.Build(sc, engine.Options{Registry: reg})
//
// The engine itself knows none of the edge components by name, so that its
// core stays free of sockets, processes and devices.
package components

import (
	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/extern"
	"skyloop/mavlink"
	"skyloop/mavlink/mavnet"
	"skyloop/netsim/ns3"
	"skyloop/netsim/pcap"
	"skyloop/netsim/tap"
	"skyloop/netsim/wifi"
	"skyloop/px4sitl"
	"skyloop/ros2"
	"skyloop/vehicle/mujoco/mjlib"
)

// Registry returns a new registry of every component.
func Registry() *engine.Registry {
	g := engine.Core()
	g.AddBackend(wifi.SpecWith(pcap.NewWriter))
	g.AddBackend(ns3.Spec)
	g.AddBackend(extern.NetworkSpec)
	g.AddBehavior(extern.BehaviorSpec)
	g.AddBehavior(mavnet.VehicleSpec)
	g.AddBehavior(mavlink.GCSSpec)
	g.AddBehavior(mavnet.GatewaySpec)
	g.AddBehavior(tap.BridgeSpec)
	g.AddBehavior(ros2.Spec)
	g.AddController(px4sitl.Spec)
	g.AddController(ardupilot.Spec)
	g.UseMuJoCo(mjlib.Lib{})
	return g
}
