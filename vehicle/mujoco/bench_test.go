package mujoco_test

import (
	"fmt"
	"testing"

	"skyloop/geom"
)

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
