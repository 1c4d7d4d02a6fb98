// Package firmware is what skyloop's bridges to real flight stacks share.
// A bridge (package px4sitl for PX4, package ardupilot for ArduCopter)
// makes a firmware's SITL build fly a multirotor of skyloop's physics: it
// launches one firmware process per vehicle, or waits for one started by
// hand, and exchanges sensors and motor outputs with it in lockstep over
// the firmware's own simulator protocol (MAVLink HIL messages on TCP for
// PX4, ArduPilot's JSON physics packets on UDP). Ground stations reach the
// firmware over MAVLink through the simulated network, not through the
// bridge.
//
// What the bridges share lives here: the checks of their scenario
// parameters (ports, listen address and peers, wall-clock timeouts,
// firmware parameters, where the build is), the plumbing of a controller
// that is not its protocol (Bridge: the process and its files, the
// transcript, the first error, refusing behaviours' commands), and the
// shape of their controller spec (Stack). The protocols themselves stay in
// the bridges.
package firmware
