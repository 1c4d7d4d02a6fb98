package behavior_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"skyloop/behavior"
	"skyloop/geom"
	"skyloop/sim"
)

// paperPlatoon returns the platoon parameters of the netbots paper's
// controller: heading gain 3, turn rate within ±2 rad/s, speed times the
// cosine of the heading error within [-0.2, 0.8] m/s.
func paperPlatoon() *behavior.PlatoonParams {
	return &behavior.PlatoonParams{Waypoints: []geom.Vec3{{X: 4.5, Y: 2.5}, {X: -4.5, Y: 2.5}}, Speed: 0.8, Gap: 1, GapGain: 1.2, HeadGain: 3, MaxSpeed: 0.8, MinSpeed: -0.2,
		MaxTurn: 2, CosSpeed: true, Accept: 0.3, Period: 10 * sim.Millisecond, Leader: behavior.LeaderDrive}
}

// TestSteerLaw: the steering law's speed and turn rate with the paper's
// options and with the defaults (which are the netbots study's baseline law as before:
// speed within [0, max_speed], turn rate unclipped, no cosine).
func TestSteerLaw(t *testing.T) {
	pp := paperPlatoon()
	def := &behavior.PlatoonParams{Speed: 0.5, Gap: 1, GapGain: 1.2, HeadGain: 2, MaxSpeed: 1, Accept: 0.2, Period: sim.Millisecond, Leader: behavior.LeaderGoto}
	at := func(deg float64) geom.Vec3 { // a target 2 m away at deg from the robot's heading (east)
		return geom.V(2*math.Cos(deg*math.Pi/180), 2*math.Sin(deg*math.Pi/180), 0)
	}
	for _, c := range []struct {
		p            *behavior.PlatoonParams
		deg, v       float64
		wantV, wantW float64
	}{
		{pp, 0, 0.8, 0.8, 0},
		{pp, 0, 1.5, 0.8, 0},  // clipped at 0.8
		{pp, 60, 0.8, 0.4, 2}, // cos 60 = 0.5; 3 * 1.047 rad/s clipped at 2
		{pp, -10, 0.8, 0.8 * math.Cos(math.Pi/18), -3 * math.Pi / 18}, // inside the turn limit
		{pp, 180, 0.8, -0.2, 3 * math.Pi},                             // facing away: -0.8 clipped at -0.2; turning at the limit (either way)
		{pp, 0, -1, -0.2, 0},                                          // too close: backs up at most 0.2 m/s
		{def, 60, 0.8, 0.8, 2 * math.Pi / 3},                          // no cosine, no turn limit
		{def, 0, -1, 0, 0},                                            // never backs up
		{def, 0, 3, 1, 0},
	} {
		v, w := behavior.SteerLaw(c.p, geom.Vec3{}, 0, at(c.deg), c.v)
		wantW := c.wantW
		if c.p.MaxTurn > 0 {
			wantW = math.Max(-c.p.MaxTurn, math.Min(c.p.MaxTurn, wantW))
		}
		if math.Abs(v-c.wantV) > 1e-12 || math.Abs(math.Abs(w)-math.Abs(wantW)) > 1e-12 {
			t.Errorf("max_turn %v cos %v: target at %v deg, speed %v: got %.4f m/s %.4f rad/s, want %.4f m/s %.4f rad/s",
				c.p.MaxTurn, c.p.CosSpeed, c.deg, c.v, v, w, c.wantV, wantW)
		}
	}
	// The follower law feeds v_pred + gap_gain (dist - gap) to it: 2 m
	// behind a predecessor at 0.3 m/s, 0.3 + 1.2 = 1.5, clipped to 0.8.
	if v, _ := behavior.FollowLaw(pp, geom.Vec3{}, 0, geom.V(2, 0, 0), 0.3); v != 0.8 {
		t.Errorf("follower 2 m behind: %v m/s, want 0.8", v)
	}
	if v, _ := behavior.FollowLaw(pp, geom.Vec3{}, 0, geom.V(0.5, 0, 0), 0); math.Abs(v+0.2) > 1e-12 {
		t.Errorf("follower 0.5 m behind a stopped one: %v m/s, want -0.2", v)
	}
}

// TestPlatoonParamsRefused: the new keys are checked with the key and the
// value in the message.
func TestPlatoonParamsRefused(t *testing.T) {
	p := paperPlatoon()
	if bad := p.Validate(); len(bad) > 0 {
		t.Fatalf("paper params: %v", bad)
	}
	p.MaxTurn, p.MinSpeed, p.Leader = -1, 0.1, "follow"
	bad := p.Validate()
	for k, want := range map[string]string{"max_turn": "got -1", "min_speed": "<= 0 m/s (0: never reverse), got 0.1", "leader": `goto or drive, got "follow"`} {
		if !strings.Contains(bad[k], want) {
			t.Errorf("%s: %q, want %q", k, bad[k], want)
		}
	}
	p = paperPlatoon()
	p.MaxTurn = math.Inf(1)
	if bad := p.Validate(); bad["max_turn"] == "" {
		t.Error("max_turn +Inf accepted")
	}
}

// TestPlatoonLeaderDrive: a leader driving itself (leader: drive) keeps
// its speed through its waypoints, covering speed x time less its start-up
// lag; one handed the waypoints by goto slows near each (within
// speed/pos_gain = 0.5 m) and covers less. Both stay on their 4 x 3 m loop.
func TestPlatoonLeaderDrive(t *testing.T) {
	dist := map[string]float64{}
	for _, mode := range []string{behavior.LeaderGoto, behavior.LeaderDrive} {
		s := run(t, fmt.Sprintf(`name: lead
duration: 30s
tick: 2ms
vehicles:
  - name: robot
    kind: groundbot
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 1}
    behaviors:
      - {type: platoon, waypoints: [[4, 0], [4, 3], [0, 3], [0, 0]], speed: 0.5, accept: 0.2, heading_gain: 3, max_turn: 2, period: 10ms, leader: %s}
      - {type: beacon, format: planar}
`, mode))
		v := s.Vehicles[0]
		dist[mode] = v.DistanceM
		x, y := v.Final.X, v.Final.Y
		off := math.Min(math.Min(math.Abs(x), math.Abs(x-4)), math.Min(math.Abs(y), math.Abs(y-3)))
		if off > 0.6 || x < -0.6 || x > 4.6 || y < -0.6 || y > 3.6 {
			t.Errorf("leader %s ends at (%.2f, %.2f), off its loop", mode, x, y)
		}
	}
	t.Logf("distance in 30 s: goto %.2f m, drive %.2f m", dist[behavior.LeaderGoto], dist[behavior.LeaderDrive])
	if d := dist[behavior.LeaderDrive]; d < 0.5*29.8 {
		t.Errorf("leader: drive covered %.2f m in 30 s at 0.5 m/s: it slowed down", d)
	}
	if dist[behavior.LeaderGoto] > 0.95*dist[behavior.LeaderDrive] {
		t.Errorf("leader: goto covered %.2f m, drive %.2f m: goto should slow near its waypoints", dist[behavior.LeaderGoto], dist[behavior.LeaderDrive])
	}
}
