package scenario

import (
	"testing"

	"skyloop/geom"
)

// TestCoverageAreaObstacles: the coverage area's obstacle cells with a
// height become world obstacles, after the world's own; without a height
// they do not.
func TestCoverageAreaObstacles(t *testing.T) {
	text := `
name: c
duration: 1s
vehicles: [{name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}]
world:
  obstacles: [{name: mast, min: [0, 0, 0], max: [1, 1, 30]}]
coverage: {origin: [100, -50], area: [40, 20], cell: 10, obstacles: [[3, 1], [0, 0]], obstacle_height: 12}
`
	sc, err := Parse("c.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Obstacle{{Name: "mast", Min: geom.V(0, 0, 0), Max: geom.V(1, 1, 30)},
		{Name: "cell-3-1", Min: geom.V(130, -40, 0), Max: geom.V(140, -30, 12)},
		{Name: "cell-0-0", Min: geom.V(100, -50, 0), Max: geom.V(110, -40, 12)}}
	if len(sc.World.Obstacles) != len(want) {
		t.Fatalf("obstacles %+v", sc.World.Obstacles)
	}
	for i := range want {
		if sc.World.Obstacles[i] != want[i] {
			t.Errorf("obstacle %d: %+v, want %+v", i, sc.World.Obstacles[i], want[i])
		}
	}
	sc, err = Parse("c.yaml", []byte(`
name: c
duration: 1s
vehicles: [{name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}]
coverage: {area: [40, 20], cell: 10, obstacles: [[3, 1]]}
`))
	if err != nil || len(sc.World.Obstacles) != 0 {
		t.Errorf("without obstacle_height: %v, %+v", err, sc.World.Obstacles)
	}
}
