package plan

import (
	"fmt"
	"slices"
	"strings"
)

// NamedEnergy is a planning energy model with where it comes from.
type NamedEnergy struct {
	Energy
	// Speed and Altitude are the flight the model was calibrated at, m/s
	// and m (0 for the spec model).
	Speed, Altitude float64
	// Doc says where the coefficients come from.
	Doc string
}

// energyModels are the named planning energy models: UB-ANC's
// empirical one and the ones fitted to each multirotor preset's physics
// battery energy by `skyloop calibrate` (multirotor.Calibrate in package
// kind/multirotor: straight legs and turns at the survey's speed and
// altitude, least squares; docs/calibration.md). TestEmbeddedCalibration in package kind/multirotor
// flies the calibration again and checks these values.
var energyModels = map[string]NamedEnergy{
	"spec": {Energy: DefaultEnergy, Doc: "UB-ANC's empirical model for a small quadrotor (coverage planning experiment)"},
	"iris": {Energy: Energy{PerMetre: 33.32, PerDegree: 3.989}, Speed: 5, Altitude: 10,
		Doc: "the iris preset with its PX4-like waypoint following (wp_nav: px4)"},
	"iris-arducopter": {Energy: Energy{PerMetre: 34.89, PerDegree: 8.123}, Speed: 5, Altitude: 10,
		Doc: "the iris preset flying ArduCopter 3.5's waypoint segments (autopilot: {wp_nav: arducopter})"},
	"crazyflie": {Energy: Energy{PerMetre: 2.594, PerDegree: 0.1291}, Speed: 3, Altitude: 10,
		Doc: "the crazyflie preset with its PX4-like waypoint following, at its 3 m/s cruise speed"},
}

// EnergyModel returns the named planning energy model: spec (UB-ANC's
// 0.1164 J/m and 0.0173 J/deg) or a calibrated preset (EnergyModels lists
// them).
func EnergyModel(name string) (NamedEnergy, error) {
	m, ok := energyModels[name]
	if !ok {
		return NamedEnergy{}, fmt.Errorf("unknown energy model %q: want one of %s", name, strings.Join(EnergyModels(), ", "))
	}
	return m, nil
}

// EnergyModels returns the names of the planning energy models, sorted.
func EnergyModels() []string {
	out := make([]string, 0, len(energyModels))
	for k := range energyModels {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
