package groundbotctl

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/vehicle/groundbot"
)

func TestWheelSaturationKeepsCurvature(t *testing.T) {
	p := groundbot.DefaultParams()
	c := NewController(&p, geom.V(0, 0, 0), 0)
	c.setWheels(5, 5) // far beyond the wheels' limit
	if math.Max(math.Abs(c.wlCmd), math.Abs(c.wrCmd)) > p.MaxWheelSpeed+1e-9 {
		t.Fatalf("wheel command above the limit: %v %v", c.wlCmd, c.wrCmd)
	}
	vv := p.WheelRadius * (c.wrCmd + c.wlCmd) / 2
	w := p.WheelRadius * (c.wrCmd - c.wlCmd) / p.Track
	if math.Abs(w/vv-1) > 1e-9 {
		t.Fatalf("curvature changed: v=%v w=%v", vv, w)
	}
}
