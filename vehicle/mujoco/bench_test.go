package mujoco_test

import (
	"testing"

	"skyloop/internal/mjtest"
	"skyloop/vehicle/mujoco"
)

const benchModel = `<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="0 0 1"/>
<body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>`

// BenchmarkBoundary is the cost of one call across the purego boundary:
// MuJoCo's cheapest function (mj_version), so nearly all of it is the
// crossing.
func BenchmarkBoundary(b *testing.B) {
	mjtest.Require(b)
	for b.Loop() {
		mujoco.VersionNumber()
	}
}

// BenchmarkStepBox is one mj_step of a box resting on the floor: the
// boundary plus MuJoCo's smallest step with a contact.
func BenchmarkStepBox(b *testing.B) {
	mjtest.Require(b)
	m, err := mujoco.LoadXML([]byte(benchModel), "")
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for b.Loop() {
		m.Step()
	}
}
