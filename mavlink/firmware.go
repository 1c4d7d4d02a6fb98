package mavlink

import "net/netip"

// Firmware is what a vehicle flown by real flight firmware offers the
// mavlink behaviour: where, on loopback, the firmware's ground-station
// link is. With it the behaviour runs no endpoint of its own and relays
// instead: frames that reach the vehicle's node on the MAVLink port go to
// the firmware, and the firmware's go from the vehicle's node to the
// ground stations, through the simulated network. PX4 (px4sitl) has a UDP
// link (its port is MAVLinkPort, and it talks to whoever talks to it);
// ArduPilot (package ardupilot) a TCP server (FirmwareTCP). Package
// mavnet opens the connection (a FirmwareLink).
type Firmware interface {
	MAVLinkPort() int
}

// FirmwareTCP is a firmware whose ground-station link is a TCP server on
// loopback (ArduPilot's SERIAL0 on 5760+10i).
type FirmwareTCP interface {
	MAVLinkTCP() int
}

// FirmwareHost is a firmware that may run on another host (ardupilot.listen
// with peer): the relay connects to its ground-station link at the address
// its physics packets come from. FirmwareHost returns that address, or the
// zero Addr before the firmware has sent any; without the interface the
// relay connects on loopback.
type FirmwareHost interface {
	FirmwareHost() netip.Addr
}

// ArmingInHeartbeats is a firmware whose vehicle controller cannot tell
// when it arms (ArduPilot's SITL servo packets carry no armed flag; PX4's
// actuator outputs do, and its controller logs them). For such firmware
// the relay logs the "armed" and "disarmed" events, from the safety-armed
// flag of the heartbeats passing through it.
type ArmingInHeartbeats interface {
	ArmingInHeartbeats() bool
}

// FirmwareLink is the relay's connection to a firmware's ground-station
// link; package mavnet opens it on the host (VehicleBehavior.AttachFirmware).
type FirmwareLink interface {
	// Drain hands every chunk of frames received since the last call to
	// fn.
	Drain(fn func(data []byte)) error
	// Write sends frames to the firmware (dropped while not connected).
	Write(b []byte)
}
