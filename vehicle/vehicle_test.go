package vehicle

import (
	"math"
	"strings"
	"testing"

	"skyloop/geom"
)

func TestCommandValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		c    Command
		want string // "" = valid
	}{
		{Command{Kind: CmdArm}, ""},
		{Command{Kind: CmdHold, Pos: geom.V(inf, 0, 0)}, ""}, // Pos does not matter to hold
		{Command{Kind: CmdTakeoff, Alt: 5}, ""},
		{Command{Kind: CmdTakeoff, Alt: MaxTakeoffAlt}, ""},
		{Command{Kind: CmdTakeoff, Alt: 0}, "takeoff altitude 0"},
		{Command{Kind: CmdTakeoff, Alt: -1}, "takeoff altitude -1"},
		{Command{Kind: CmdTakeoff, Alt: 1e308}, "takeoff altitude 1e+308"},
		{Command{Kind: CmdTakeoff, Alt: nan}, "takeoff altitude NaN"},
		{Command{Kind: CmdGoto, Pos: geom.V(1, 2, 3), Yaw: nan}, ""},
		{Command{Kind: CmdGoto, Pos: geom.V(-MaxWorldXY, MaxWorldXY, MinWorldZ), Yaw: 3, Speed: MaxCommandSpeed}, ""},
		{Command{Kind: CmdGoto, Pos: geom.V(1e308, 0, 10), Yaw: nan}, "goto position [1e+308 0 10]"},
		{Command{Kind: CmdGoto, Pos: geom.V(0, -2e6, 10), Yaw: nan}, "goto position [0 -2e+06 10]"},
		{Command{Kind: CmdGoto, Pos: geom.V(0, 0, MaxWorldZ+1), Yaw: nan}, "goto position"},
		{Command{Kind: CmdGoto, Pos: geom.V(0, 0, MinWorldZ-1), Yaw: nan}, "goto position"},
		{Command{Kind: CmdGoto, Pos: geom.V(nan, 0, 0), Yaw: nan}, "goto position [NaN 0 0]"},
		{Command{Kind: CmdGoto, Yaw: inf}, "goto yaw +Inf"},
		{Command{Kind: CmdGoto, Yaw: 1e300}, "goto yaw 1e+300"},
		{Command{Kind: CmdGoto, Yaw: nan, Speed: -1}, "goto speed -1"},
		{Command{Kind: CmdGoto, Yaw: nan, Speed: 1e300}, "goto speed 1e+300"},
		{Command{Kind: CmdGoto, Yaw: nan, Speed: nan}, "goto speed NaN"},
		{Command{Kind: CmdVelocity, Vel: geom.V(10, -3, 1)}, ""},
		{Command{Kind: CmdVelocity, Vel: geom.V(0, 1e308, 0)}, "velocity [0 1e+308 0]"},
		{Command{Kind: CmdVelocity, Vel: geom.V(800, 800, 0)}, "velocity [800 800 0]"},
		{Command{Kind: CmdVelocity, Vel: geom.V(0, 0, nan)}, "velocity [0 0 NaN]"},
		{Command{Kind: CmdDrive, V: 2, Omega: -0.5}, ""},
		{Command{Kind: CmdDrive, V: inf}, "drive speed +Inf"},
		{Command{Kind: CmdDrive, V: 1, Omega: 1e9}, "turn rate 1e+09"},
		{Command{Kind: CommandKind(99)}, "unknown command kind 99"},
	}
	for _, c := range cases {
		err := c.c.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: got %v, want an error with %q", c.c, err, c.want)
		}
	}
}

// TestEventsNoAllocation: a vehicle reports mode changes and formatted
// details without allocating once its buffer has room, and the details
// read back as the formatting would have written them.
func TestEventsNoAllocation(t *testing.T) {
	ev := Events{List: make([]Event, 0, 4)}
	x, y, z := 1.234, -5.678, 10.0
	if n := testing.AllocsPerRun(100, func() {
		ev.List = ev.List[:0]
		ev.Add(0, "mode", ModeChange(ModeGoto, ModeHold))
		ev.Addf(0, "arrived", "%.2f %.2f %.2f", x, y, z)
		ev.Addf(0, "takeoff_done", "%.2f", z)
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
	want := []string{"goto->hold", "1.23 -5.68 10.00", "10.00"}
	for i, e := range ev.List {
		if got := e.Text(); got != want[i] {
			t.Errorf("event %d (%s): detail %q, want %q", i, e.Name, got, want[i])
		}
	}
	if got := ModeChange(Mode(200), ModeIdle); got != "mode200->idle" {
		t.Errorf("unknown mode change: %q", got)
	}
}
