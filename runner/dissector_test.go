package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/scenarios"
)

// TestWiresharkDissector reads a quickstart run's packets.pcap with the
// real tshark and skyloop's Lua dissector (tools/wireshark/skyloop.lua):
// every packet decodes as one of skyloop's kinds, on skyloop's own ports
// (never MAVLink's 14550), as many of each as the run sent; state updates
// and telemetry carry their sender's node id, commands a known opcode,
// and the positions are inside the scenario's world.
func TestWiresharkDissector(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_TSHARK") != "" {
			t.Fatalf("tshark required: %v", err)
		}
		t.Skip("skipping: tshark not installed (apt-get install tshark)")
	}
	lua, err := filepath.Abs("../tools/wireshark/skyloop.lua")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := scenarios.Lookup("quickstart")
	sc := strings.Replace(string(base), "duration: 60s", "duration: 5s", 1) + "outputs: {pcap: true}\n"
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Execute(buildYAML(t, sc, engine.Options{Registry: registry}), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-X", "lua_script:"+lua, "-r", filepath.Join(dir, "packets.pcap"), "-T", "fields", "-E", "separator=;",
		"-e", "ip.src", "-e", "udp.dstport", "-e", "_ws.col.Protocol", "-e", "skyloop.kind", "-e", "skyloop.id", "-e", "skyloop.op",
		"-e", "skyloop.x", "-e", "skyloop.y", "-e", "skyloop.z", "-e", "skyloop.mode")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("tshark: %v %s", err, msg)
	}
	count := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, ";")
		if len(f) != 10 {
			t.Fatalf("tshark line %q", l)
		}
		src, port, proto, kind := f[0], f[1], f[2], f[3]
		if proto != "skyloop" || kind == "" {
			t.Fatalf("a packet not decoded by the dissector: %q", l)
		}
		want := map[string]string{"state": "5000", "command": "5001", "telemetry": "5001"}[kind]
		if port != want {
			t.Errorf("%s on port %s, want %s: %q", kind, port, want, l)
		}
		count[kind]++
		last, _ := strconv.Atoi(src[strings.LastIndex(src, ".")+1:])
		if kind != "command" && f[4] != strconv.Itoa(last-1) {
			t.Errorf("%s from %s carries node id %s, want %d", kind, src, f[4], last-1)
		}
		if kind == "command" && (f[5] < "1" || f[5] > "5" || len(f[5]) != 1) {
			t.Errorf("command opcode %q", f[5])
		}
		for _, v := range f[6:9] {
			if x, err := strconv.ParseFloat(v, 64); err != nil || x < -60 || x > 60 {
				t.Errorf("%s position %q outside the world (%v): %q", kind, v, err, l)
			}
		}
	}
	by := res.Summary.Network.ByKind
	for kind, k := range map[string]string{"state": "state", "command": "cmd", "telemetry": "telem"} {
		if count[kind] == 0 || count[kind] != by[k].Tx {
			t.Errorf("%d %s packets decoded, the run sent %d", count[kind], kind, by[k].Tx)
		}
	}
}
