package simport

import (
	"net/netip"
	"strings"
	"testing"
)

// TestAccess: listen addresses and peer filters parse, loopback is always
// accepted, others only when a peer entry contains them, and a port open
// beyond loopback without peers is refused.
func TestAccess(t *testing.T) {
	a, err := Parse("0.0.0.0", "10.0.0.5, 10.1.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"127.0.0.1": true, "::1": true, "10.0.0.5": true, "10.0.0.6": false,
		"10.1.0.200": true, "10.1.1.1": false, "::ffff:10.0.0.5": true, "192.0.2.1": false} {
		if got := a.Allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: allowed %v, want %v", addr, got, want)
		}
	}
	if a, err := Parse("127.0.0.1", ""); err != nil || !a.Allowed(netip.MustParseAddr("127.0.0.1")) || a.Allowed(netip.MustParseAddr("10.0.0.1")) {
		t.Errorf("loopback default: %+v %v", a, err)
	}
	for _, c := range []struct{ listen, peer, want string }{
		{"0.0.0.0", "", "not a loopback address: set peer"},
		{"localhost", "", "want an IP address"},
		{"0.0.0.0", "10.0.0.300", `peer "10.0.0.300"`},
		{"0.0.0.0", "10.0.0.0/40", `peer "10.0.0.0/40"`},
	} {
		if _, err := Parse(c.listen, c.peer); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q: got %v, want %q", c.listen, c.peer, err, c.want)
		}
	}
}
