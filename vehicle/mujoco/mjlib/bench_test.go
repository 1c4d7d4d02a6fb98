package mjlib

import (
	"testing"
)

const benchModel = `<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="0 0 1"/>
<body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>`

// requireLib skips b when MuJoCo cannot be loaded (internal/mjtest, which
// imports this package, cannot be used from its own tests).
func requireLib(b *testing.B) {
	b.Helper()
	if err := Load(); err != nil {
		b.Skipf("skipped: %v", err)
	}
}

// BenchmarkBoundary is the cost of one call across the purego boundary:
// MuJoCo's cheapest function (mj_version), so nearly all of it is the
// crossing.
func BenchmarkBoundary(b *testing.B) {
	requireLib(b)
	for b.Loop() {
		VersionNumber()
	}
}

// BenchmarkStepBox is one mj_step of a box resting on the floor, through
// mujoco.Model's Step (the core's call through mujoco.Handle): the
// boundary plus MuJoCo's smallest step with a contact (allocating
// nothing).
func BenchmarkStepBox(b *testing.B) {
	requireLib(b)
	m, err := LoadXML([]byte(benchModel), "")
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		m.Step()
	}
}
