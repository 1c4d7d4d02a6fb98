package twin

import (
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/sim"
)

func TestTextReplacesTheNetworkOnly(t *testing.T) {
	in := `name: t
seed: 9
tick: 1ms
network:
  backend: wifi
  mode: DsssRate11Mbps
  epoch: 10ms
  position_period: 20ms
  routing: olsr
  tx_power: 16
vehicles:
  - {name: a, kind: pointmass, count: 2, spawn: {layout: line, spacing: 1}}
outputs: {twin: true, plots: false}
`
	out, err := Text("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"backend: ideal", "epoch: 10ms", "position_period: 20ms", "twin: false", "plots: false", "seed: 9", "count: 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("twin lacks %q:\n%s", want, s)
		}
	}
	for _, gone := range []string{"wifi", "Dsss", "olsr", "tx_power", "twin: true"} {
		if strings.Contains(s, gone) {
			t.Errorf("twin keeps %q:\n%s", gone, s)
		}
	}
	// The engine's own mode stays.
	out, err = Text("t.yaml", []byte("name: t\nnetwork: {backend: impair, epoch: 10ms, mode: replay, loss: 0.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "mode: replay") || strings.Contains(s, "loss") {
		t.Errorf("twin:\n%s", s)
	}
}

func TestErrorFields(t *testing.T) {
	got := ErrorFields(map[string]any{"gap_err_mean_m": 1.5, "formation_err_max_m": 2.0, "err_m": 3.0, "samples": 10,
		"closest_approach_m": 0.5, "group": "g", "terror_m": 1.0})
	if len(got) != 3 || got["gap_err_mean_m"] != 1.5 || got["formation_err_max_m"] != 2 || got["err_m"] != 3 {
		t.Errorf("%v", got)
	}
}

func TestCompare(t *testing.T) {
	at := func(s float64) *sim.Time { v := sim.Time(sim.Seconds(s)); return &v }
	tr := func(pts ...[]geom.Vec3) *metrics.Track { return &metrics.Track{Sample: sim.Second, Positions: pts} }
	run := &Figures{
		Vehicles: []Vehicle{{ID: 0, Name: "a", DistanceM: 10.5, EnergyJ: 100, Done: at(12)}, {ID: 1, Name: "b", DistanceM: 3, EnergyJ: 7}},
		Errors:   map[string]map[string]float64{"p": {"gap_err_mean_m": 0.5}, "only-run": {"err_m": 1}},
		Track:    tr([]geom.Vec3{{X: 1}, {X: 2}}, []geom.Vec3{{Y: 3}}),
	}
	ref := &Figures{
		Vehicles: []Vehicle{{ID: 0, Name: "a", DistanceM: 10, EnergyJ: 90, Done: at(10)}, {ID: 1, Name: "b", DistanceM: 3, EnergyJ: 7, Done: at(4)}},
		Errors:   map[string]map[string]float64{"p": {"gap_err_mean_m": 0.25}},
		Track:    tr([]geom.Vec3{{X: 0}, {X: 0}}, []geom.Vec3{{Y: 0}, {Y: 9}}),
	}
	c := Compare(run, ref)
	o := c.Overall
	if o.Missions != 2 || o.Completed != 1 || o.TwinCompleted != 2 || o.CompletionS != nil || *o.TwinCompletionS != 10 || o.CompletionDeltaS != nil {
		t.Errorf("overall completion %+v", o)
	}
	if o.ExtraDistanceM != 0.5 || o.ExtraEnergyJ != 10 {
		t.Errorf("extra %v m %v J", o.ExtraDistanceM, o.ExtraEnergyJ)
	}
	// Samples: a at 1 and 2 m, b at 3 m (b's second sample is the
	// reference's only).
	if *o.TrajDevMeanM != 2 || *o.TrajDevMaxM != 3 {
		t.Errorf("deviation %v %v", *o.TrajDevMeanM, *o.TrajDevMaxM)
	}
	a, b := c.Vehicles[0], c.Vehicles[1]
	if *a.CompletionDeltaS != 2 || *a.TrajDevMeanM != 1.5 || *a.TrajDevMaxM != 2 || b.CompletionDeltaS != nil || *b.TrajDevMeanM != 3 {
		t.Errorf("vehicles %+v %+v", a, b)
	}
	if len(c.Measures) != 1 || c.Measures["p"]["gap_err_mean_m"] != 0.25 {
		t.Errorf("measures %v", c.Measures)
	}
}

// TestMAVLinkMissionCompletion: a vehicle flown by a scripted MAVLink
// ground station completed its mission when the station saw it land,
// whether the summary was read back from JSON (float) or is fresh (int64).
func TestMAVLinkMissionCompletion(t *testing.T) {
	for _, done := range []any{int64(42e9), float64(42e9)} {
		s := &engine.Summary{
			Vehicles: []engine.VehicleSummary{{ID: 0, Name: "drone-0"}, {ID: 1, Name: "drone-1"}},
			Agents: map[string]map[string]any{"gcs": {"mavlink_gcs": map[string]any{
				"drone-0":       map[string]any{"mission_done_ns": done},
				"drone-1":       map[string]any{"complete": false},
				"coverage_plan": map[string]any{"cells": 10},
			}}},
		}
		f := FromSummary(s, nil, nil)
		if f.Vehicles[0].Done == nil || *f.Vehicles[0].Done != sim.Time(42*sim.Second) {
			t.Errorf("%T: drone-0 done at %v, want 42s", done, f.Vehicles[0].Done)
		}
		if f.Vehicles[1].Done != nil {
			t.Errorf("drone-1 never landed but is done at %v", *f.Vehicles[1].Done)
		}
	}
}
