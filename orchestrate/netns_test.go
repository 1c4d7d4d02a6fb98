package orchestrate

import (
	"os/exec"
	"strings"
	"testing"

	"skyloop/internal/nstest"
)

// needRoot skips (or fails under SKYLOOP_REQUIRE_NETNS) without the
// privileges namespaces need.
func needRoot(t *testing.T) {
	t.Helper()
	nstest.Need(t, CheckPrivileges, "ip")
}

func ipIn(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "ip"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %v in %s: %v: %s", args, ns, err, out)
	}
	return string(out)
}

func TestUpDownLayout(t *testing.T) {
	needRoot(t)
	const prefix = "sl-test-layout"
	nt, err := Up(prefix, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Down()
	names, _ := Namespaces(prefix + "-")
	if len(names) != 3 {
		t.Fatalf("namespaces %v", names)
	}
	a := ipIn(t, prefix+"-1", "-o", "addr")
	for _, want := range []string{"lo", "inet 10.0.0.2/24", "wifi_tap", "inet 10.100.1.2/24", "host_veth"} {
		if !strings.Contains(a, want) {
			t.Errorf("namespace 1 lacks %q:\n%s", want, a)
		}
	}
	r := ipIn(t, prefix+"-1", "route")
	if strings.Contains(r, "default") || !strings.Contains(r, "10.0.0.0/24 dev wifi_tap") || !strings.Contains(r, "10.100.1.0/24 dev host_veth") {
		t.Errorf("routes in namespace 1:\n%s", r)
	}
	// No route to another vehicle's host link: only the TAP leads out.
	if out, err := exec.Command("ip", "netns", "exec", prefix+"-1", "ip", "route", "get", "10.100.2.2").CombinedOutput(); err == nil {
		t.Errorf("namespace 1 has a route to vehicle 2's host link: %s", out)
	}
	n := ipIn(t, prefix+"-0", "neigh")
	if !strings.Contains(n, "10.0.0.3 dev wifi_tap lladdr 02:53:4c:00:00:03 PERMANENT") {
		t.Errorf("static neighbours in namespace 0:\n%s", n)
	}
	// Up again with the same prefix from the same process: leftovers are
	// replaced, not duplicated.
	nt.Down()
	nt2, err := Up(prefix, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := Namespaces(prefix + "-"); len(names) != 2 {
		t.Fatalf("after the second Up: %v", names)
	}
	if err := nt2.Down(); err != nil {
		t.Fatal(err)
	}
	if names, _ := Namespaces(prefix + "-"); len(names) != 0 {
		t.Fatalf("after Down: %v", names)
	}
}

func TestPrefixes(t *testing.T) {
	if p := Prefix("UBANC chain_5"); p != "sl-ubanc-chain-5" {
		t.Errorf("Prefix = %q", p)
	}
	// Long names that differ late keep apart.
	if a, b := Prefix("formation-experiment-alpha"), Prefix("formation-experiment-beta"); a == b || checkPrefix(a) != nil {
		t.Errorf("prefixes %q and %q", a, b)
	}
	if p := Prefix("a-name-much-longer-than-the-prefix-may-be"); len(p) < maxPrefix-1 || checkPrefix(p) != nil {
		t.Errorf("long name: prefix %q", p)
	}
	for _, bad := range []string{"x", "sl-", "sl-UPPER", "sl-a-prefix-far-too-long-for-the-limit", "netns-1"} {
		if checkPrefix(bad) == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
	if ip, ok := NodeOfIP([4]byte{10, 0, 0, 7}); !ok || ip != 6 {
		t.Errorf("10.0.0.7 -> %d %v", ip, ok)
	}
	if _, ok := NodeOfIP([4]byte{10, 100, 0, 7}); ok {
		t.Error("10.100.0.7 mapped to a vehicle")
	}
}
