package behavior_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
)

// run executes a scenario with the core components, without files, and
// returns its summary.
func run(t *testing.T, text string) *runner.Summary {
	t.Helper()
	return runWith(t, engine.Core(), text)
}

// TestStations: the vehicle leaves for point i at i*dwell, arrives within
// a few seconds, stays until the next departure (the last point is left at
// 3*dwell, when the mission is done), and ends at the last point;
// summary.json says when each point was reached and left, and -1 for a
// point not left before the end.
func TestStations(t *testing.T) {
	s := run(t, `name: stations
duration: 35s
tick: 10ms
vehicles:
  - name: uav
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [5, 0, 5], spacing: 1}
    params: {physics_period: 10ms, control_period: 10ms}
    behaviors:
      - {type: stations, points: [[5, 0, 5], [10, 0, 5], [15, 0, 5]], dwell: 10s}
  - name: late
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [0, 50, 5], spacing: 1}
    params: {physics_period: 10ms, control_period: 10ms}
    behaviors:
      - {type: stations, points: [[0, 50, 5], [0, 60, 5]], dwell: 20s}
`)
	if f := s.Vehicles[0].Final; math.Abs(f.X-15) > 0.1 || math.Abs(f.Z-5) > 0.1 {
		t.Fatalf("ends at %v, want (15, 0, 5)", f)
	}
	b, _ := json.Marshal(s.Agents["uav-0"]["stations"])
	var got struct {
		Stations []struct {
			Point    [3]float64 `json:"point"`
			ArriveNs int64      `json:"arrive_ns"`
			LeaveNs  int64      `json:"leave_ns"`
		} `json:"stations"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Stations) != 3 {
		t.Fatalf("stations %s: %v", b, err)
	}
	b, _ = json.Marshal(s.Agents["late-0"]["stations"])
	if !strings.Contains(string(b), `"point":[0,60,5],"arrive_ns":2`) || !strings.HasSuffix(string(b), `"leave_ns":-1}]}`) {
		t.Errorf("late-0: %s, want its second point reached after 20 s and not left", b)
	}
	for i, st := range got.Stations {
		dep := int64(i) * 10e9
		if st.Point[0] != float64(5+5*i) {
			t.Errorf("station %d at %v", i, st.Point)
		}
		if st.ArriveNs < dep || st.ArriveNs > dep+5e9 {
			t.Errorf("station %d reached at %d ns, want within 5 s of its departure at %d", i, st.ArriveNs, dep)
		}
		if want := dep + 10e9; st.LeaveNs != want {
			t.Errorf("station %d left at %d ns, want %d", i, st.LeaveNs, want)
		}
	}
}

// TestStationsRejects: a dwell that is not a whole number of check periods
// is refused.
func TestStationsRejects(t *testing.T) {
	reg := engine.Core()
	sc, err := scenario.Parse("test.yaml", []byte(`name: bad
duration: 1s
vehicles:
  - {name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}, behaviors: [{type: stations, points: [[0, 0, 1]], dwell: 150ms}]}
`), reg.Schema())
	if err == nil {
		_, err = engine.Validate(sc, engine.Options{Registry: reg})
	}
	if err == nil {
		t.Fatal("dwell 150ms with a 100ms period accepted")
	}
}

// TestOrbit: vehicles circle their spawn points at 20 m radius and 5 m/s,
// keeping the phases given by phase and phase_step and the circle's
// altitude, whatever the direction.
func TestOrbit(t *testing.T) {
	for _, cw := range []bool{false, true} {
		dir := "false"
		if cw {
			dir = "true"
		}
		s := run(t, `name: orbit
duration: 60s
tick: 10ms
vehicles:
  - name: uav
    kind: pointmass
    count: 2
    spawn: {layout: line, origin: [0, 0, 5], step: [80, 0, 0]}
    params: {max_speed: 10, physics_period: 10ms, control_period: 10ms}
    behaviors:
      - {type: orbit, radius: 20, speed: 5, phase_step: 180, start: 10s, clockwise: `+dir+`}
`)
		// 50 s of circling at 0.25 rad/s: 12.5 rad from the start angle.
		a := 12.5
		if cw {
			a = -a
		}
		for i, v := range s.Vehicles {
			ph := a + float64(i)*math.Pi
			want := [3]float64{80*float64(i) + 20*math.Cos(ph), 20 * math.Sin(ph), 5}
			got := [3]float64{v.Final.X, v.Final.Y, v.Final.Z}
			if d := math.Hypot(math.Hypot(got[0]-want[0], got[1]-want[1]), got[2]-want[2]); d > 0.5 {
				t.Errorf("clockwise %v: %s ends at %v, want %v (%.2f m off)", cw, v.Name, got, want, d)
			}
			m, _ := s.Agents[v.Name]["orbit"].(map[string]any)
			if e, _ := m["track_err_mean_m"].(float64); !(e > 0 && e < 1) {
				t.Errorf("clockwise %v: %s mean tracking error %v m", cw, v.Name, m["track_err_mean_m"])
			}
		}
	}
}
