package fwtest

import (
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"testing"

	"skyloop/engine"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/internal/nstest"
	"skyloop/orchestrate"
)

// Hosts makes n network namespaces standing in for firmware hosts, each
// joined to this one by a veth pair: host k (from 0) is 10.<net>.<k+1>.2,
// this end 10.<net>.<k+1>.1, loopback up. Call nstest.Need first.
func Hosts(t *testing.T, net, n int) []string {
	t.Helper()
	hosts := make([]string, n)
	for k := range hosts {
		hosts[k] = nstest.Neighbour(t, fmt.Sprintf("10.%d.%d.1/24", net, k+1), fmt.Sprintf("10.%d.%d.2/24", net, k+1))
		if out, err := exec.Command("ip", "-n", hosts[k], "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s link set lo up: %v: %s", hosts[k], err, out)
		}
	}
	return hosts
}

// StartRemote starts the firmware of every vehicle of r flown by a
// firmware.Remote as `skyloop firmware` would, instance i inside hosts[i]
// (made by Hosts with net), sending to this end of its veth; each is
// stopped when the test ends (its output logged if the test failed). It
// fails the test unless it started one per host.
func StartRemote(t *testing.T, r *engine.Run, origin geom.Geodetic, net int, hosts []string) {
	t.Helper()
	started := 0
	for _, c := range r.Components() {
		fw, ok := c.(firmware.Remote)
		if !ok {
			continue
		}
		b := fw.FirmwareBridge()
		inst := b.Inst
		cmd, err := fw.RemoteCommand(origin, t.TempDir(), netip.MustParseAddr(fmt.Sprintf("10.%d.%d.1", net, inst+1)))
		if err != nil {
			t.Fatal(err)
		}
		in := exec.Command("ip", append([]string{"netns", "exec", hosts[inst], cmd.Path}, cmd.Args[1:]...)...)
		in.Dir, in.Env = cmd.Dir, cmd.Env
		ch, err := orchestrate.StartChild(b.Firmware, in, io.Discard, io.Discard, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ch.Stop(firmware.StopGrace)
			if t.Failed() {
				t.Logf("%s %d in %s: %s%s", b.Firmware, inst, hosts[inst], ch.Status(), ch.Tail())
			}
		})
		started++
	}
	if started != len(hosts) {
		t.Fatalf("started %d firmware instances, want %d", started, len(hosts))
	}
}
