package mujoco_test

import (
	"fmt"
	"testing"

	"skyloop/geom"

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
// boundary plus MuJoCo's smallest step with a contact (allocating
// nothing).
func BenchmarkStepBox(b *testing.B) {
	mjtest.Require(b)
	m, err := mujoco.LoadXML([]byte(benchModel), "")
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		m.Step()
	}
}

// BenchmarkWorldStep is one step of a world of 1, 3 and 8 rocker robots
// 1.5 m apart (each in its own model), wheel commands included; it
// allocates nothing.
func BenchmarkWorldStep(b *testing.B) {
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var at []geom.Vec3
			for i := 0; i < n; i++ {
				at = append(at, geom.V(-1.5*float64(i), 0, 0))
			}
			w, bots := rockers(b, nil, at...)
			k := 0
			b.ReportAllocs()
			for b.Loop() {
				stepAll(b, w, bots, k, 2)
				k++
			}
		})
	}
}
