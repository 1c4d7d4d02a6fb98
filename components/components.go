// Package components links every component skyloop ships with into a
// program: the network backends (ideal, impair, wifi, ns3, extern) and the
// behaviours that live outside package agent (mavlink, extern, the TAP
// bridge). Each registers itself when linked; import this package for its
// side effects where runs are built from scenario files:
//
//	import _ "skyloop/components"
//
// The engine itself knows none of them by name, so that its core stays
// free of sockets, processes and devices.
package components

import (
	_ "skyloop/extern"        // the extern behaviour and network backend
	_ "skyloop/mavlink"       // the MAVLink behaviours
	_ "skyloop/netsim/ideal"  // backend ideal
	_ "skyloop/netsim/impair" // backend impair
	_ "skyloop/netsim/ns3"    // backend ns3
	_ "skyloop/netsim/tap"    // the TAP bridge of isolation: netns
	_ "skyloop/netsim/wifi"   // backend wifi
)
