// Package simport decides where a firmware bridge's simulator port listens
// and whom it accepts. PX4's and ArduPilot's simulator protocols carry no
// authentication and no encryption, so a port open beyond loopback
// accepts only the firmware hosts the scenario names; loopback peers (this
// host) are always accepted, as on the default loopback port.
package simport

import (
	"fmt"
	"net/netip"
	"strings"
)

// Access is a parsed listen address and peer filter.
type Access struct {
	// Listen is the address the port is bound to.
	Listen netip.Addr
	// Peers are the addresses accepted besides loopback; empty only when
	// Listen is a loopback address.
	Peers []netip.Prefix
}

// Parse reads listen (an IP address, e.g. 127.0.0.1, 0.0.0.0 or
// 10.0.0.1) and peer (comma-separated addresses or networks, e.g.
// "10.0.0.5" or "10.0.0.0/24,10.1.0.7"). A listen address that is not
// loopback needs peer.
func Parse(listen, peer string) (Access, error) {
	var a Access
	addr, err := netip.ParseAddr(strings.TrimSpace(listen))
	if err != nil {
		return a, fmt.Errorf("listen %q: want an IP address such as 127.0.0.1 or 0.0.0.0", listen)
	}
	a.Listen = addr.Unmap()
	for _, f := range strings.Split(peer, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(f, "/") {
			if p, err = netip.ParsePrefix(f); err != nil {
				return a, fmt.Errorf("peer %q: want an IP address or a network such as 10.0.0.0/24", f)
			}
		} else {
			ip, err := netip.ParseAddr(f)
			if err != nil {
				return a, fmt.Errorf("peer %q: want an IP address or a network such as 10.0.0.0/24", f)
			}
			ip = ip.Unmap()
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		a.Peers = append(a.Peers, p.Masked())
	}
	if !a.Listen.IsLoopback() && len(a.Peers) == 0 {
		return a, fmt.Errorf("listen %s is not a loopback address: set peer to the firmware host's address or network "+
			"(e.g. 10.0.0.5 or 10.0.0.0/24); the simulator protocol has no authentication", a.Listen)
	}
	return a, nil
}

// Allowed reports whether a peer at addr may connect: loopback always,
// others when a peer entry contains them.
func (a Access) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() {
		return true
	}
	for _, p := range a.Peers {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
