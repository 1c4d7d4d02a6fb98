package groundbot

import (
	"math"
	"strings"
	"testing"

	"skyloop/fields"
)

// TestPresets: both presets are valid and named as Presets lists them;
// the netbots preset's MuJoCo keys are checked with the key and the value
// in the message.
func TestPresets(t *testing.T) {
	for _, name := range Presets() {
		p, ok := Preset(name)
		if !ok || p.Preset != name {
			t.Fatalf("Preset(%q) = %q, %v", name, p.Preset, ok)
		}
		if name == PresetNetbots {
			continue // validating MuJoCo params loads the library
		}
		if bad := p.Validate(); len(bad) > 0 {
			t.Errorf("%s: %v", name, bad)
		}
	}
	if _, ok := Preset("turtle"); ok {
		t.Error("Preset(turtle) exists")
	}
	p := NetbotsParams()
	bad := fields.Errors{}
	p.validateMuJoCo(bad)
	delete(bad, "physics") // without the library
	if len(bad) > 0 {
		t.Errorf("netbots: %v", bad)
	}
	p.MuJoCo.Drive, p.MuJoCo.WheelShape, p.MuJoCo.CasterGap, p.MuJoCo.WheelArmature = "servo", "cube", 0.06, -1
	bad = fields.Errors{}
	p.validateMuJoCo(bad)
	for k, want := range map[string]string{"mujoco.drive": `pi or velocity, got "servo"`, "mujoco.wheel_shape": `sphere or cylinder, got "cube"`,
		"mujoco.caster_gap": "0.06 m leaves the casters above the axle", "mujoco.wheel_armature": "must be >= 0, got -1"} {
		if !strings.Contains(bad[k], want) {
			t.Errorf("%s: %q, want %q", k, bad[k], want)
		}
	}
	p = NetbotsParams()
	p.MuJoCo.WheelKv, p.MuJoCo.WheelWidth = 0, math.NaN()
	bad = fields.Errors{}
	p.validateMuJoCo(bad)
	if !strings.Contains(bad["mujoco.wheel_kv"], "positive") || !strings.Contains(bad["mujoco.wheel_width"], "positive") {
		t.Errorf("kv 0, width NaN: %v", bad)
	}
}
