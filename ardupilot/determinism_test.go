package ardupilot_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/ardupilot"
	"skyloop/internal/fwtest"
	"skyloop/mavlink"
	"skyloop/scenarios"
)

// TestStartTimeIsTheTelemetryEpoch: ArduCopter's clock starts at the time
// skyloop's telemetry logs give simulated time zero.
func TestStartTimeIsTheTelemetryEpoch(t *testing.T) {
	ep, err := time.Parse(time.RFC3339, mavlink.DefaultEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Unix() != ardupilot.StartTime {
		t.Errorf("ardupilot.StartTime %d, mavlink.DefaultEpoch %s (%d)", ardupilot.StartTime, mavlink.DefaultEpoch, ep.Unix())
	}
}

// TestArduPilotDeterminism flies the chain (ubanc-chain-ardupilot: three
// ArduCopters, the built-in ground station and the companions' hand-on,
// all across the simulated 802.11b network) twice, the second time with
// two CPU-bound loops beside it, for 70 simulated
// seconds, past the first drone's arming (41.0 s) and both hand-ons
// (48.8 s, 57.1 s), with the firmware transcripts on, and compares every
// file: they must be byte-identical, but for meta.json (the wall clock)
// and ArduCopter's own console, eeprom and logs in procs/.
//
// Before, the runs differed from 1.01 s on: the relay read ArduCopter's
// MAVLink socket in a goroutine and connected to it when its dialler got
// round to it (wall clock); ArduCopter's GPS and clock started at the
// host's time; a servo packet resent while ArduCopter waited for skyloop
// got a second answer (as many as the wall clock made it resend); and
// ArduCopter's log thread held a semaphore the main loop waits on by
// stepping simulated time (docs/ardupilot.md, Determinism).
func TestArduPilotDeterminism(t *testing.T) {
	needArduPilot(t)
	text, _ := scenarios.Lookup("ubanc-chain-ardupilot")
	short := regexp.MustCompile(`(?m)^duration: \w+$`).ReplaceAllString(string(text), "duration: 70s")
	short = strings.Replace(short, "controller: ardupilot-sitl}", "controller: ardupilot-sitl, ardupilot: {transcript: true}}", 1)
	if !strings.Contains(short, "\nduration: 70s\n") || !strings.Contains(short, "transcript: true") {
		t.Fatal("the chain scenario changed: its duration or parameters are not where the test expects them")
	}
	var dirs [2]string
	for i := range dirs {
		if i == 1 {
			// The second run on a loaded machine: two CPU-bound loops
			// beside it change the wall clock, not the run.
			fwtest.Busy(t, 2)
		}
		_, dirs[i] = runText(t, "ubanc-chain-ardupilot.yaml", short)
	}
	a, b := compared(t, dirs[0]), compared(t, dirs[1])
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("the runs wrote different files:\n%v\n%v", a, b)
	}
	for _, want := range []string{"events.csv", "trace.csv", "vehicles.csv", "mavlink-drone-0.tlog", "procs/ardupilot-2.transcript.gz"} {
		if !contains(a, want) {
			t.Errorf("no %s in the run directory", want)
		}
	}
	for _, name := range a {
		x, _ := os.ReadFile(filepath.Join(dirs[0], name))
		y, _ := os.ReadFile(filepath.Join(dirs[1], name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs (%d and %d bytes)%s", name, len(x), len(y), firstDiff(x, y))
		}
	}
	// The compared span has MAVLink both ways: the hand-on reached drone
	// 3, and its motors turned.
	ev, _ := os.ReadFile(filepath.Join(dirs[0], "events.csv"))
	if !strings.Contains(string(ev), ",2,vehicle,motors_on,") {
		t.Errorf("drone 3 never spun its motors in 70 s: the runs compared less than the chain\n%s", ev)
	}
}

// compared lists the run directory's files that must not differ between
// runs: all but meta.json and ArduCopter's own files in procs/ (its
// transcripts are compared).
func compared(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "meta.json":
		case strings.HasPrefix(rel, "procs/") && !strings.HasSuffix(rel, ".transcript.gz"):
		default:
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstDiff says where two files first differ: the byte, and for text the
// two lines.
func firstDiff(x, y []byte) string {
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	start := bytes.LastIndexByte(x[:i], '\n') + 1
	line := func(b []byte) string {
		if start >= len(b) {
			return ""
		}
		end := bytes.IndexByte(b[start:], '\n')
		if end < 0 || end > 200 {
			end = min(len(b)-start, 200)
		}
		return string(b[start : start+end])
	}
	return "; first at byte " + strconv.Itoa(i) + ":\n  " + line(x) + "\n  " + line(y)
}
