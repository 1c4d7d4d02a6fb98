package firmware

import (
	"net/netip"
	"os/exec"

	"skyloop/geom"
)

// Remote is a firmware controller whose firmware may run on another host
// than skyloop's (the scenario's launch: false, listen and peer): `skyloop
// firmware` starts it there with the command Remote gives, so that it runs
// exactly as `skyloop run` would have launched it (same instance, home,
// parameters, start time), except that it sends to the simulator's host.
type Remote interface {
	// FirmwareBridge returns the controller's bridge (vehicle name,
	// instance, the firmware's name and scenario key).
	FirmwareBridge() *Bridge
	// RemoteCommand writes the firmware's files into its working
	// directory wd and returns the command that starts it there, sending
	// to the simulator at sim; origin is the scenario's local origin. It
	// fails when the scenario has skyloop launch the firmware itself
	// (launch: true).
	RemoteCommand(origin geom.Geodetic, wd string, sim netip.Addr) (*exec.Cmd, error)
}
