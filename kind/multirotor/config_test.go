package multirotor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestAutopilotJSONOrder checks that the `autopilot:` block encodes with
// the keys in the order config.json has always had (controller, then
// instruments, then estimator and loop rates), and decodes back to the
// same values.
func TestAutopilotJSONOrder(t *testing.T) {
	c, _ := PresetConfig("iris")
	c.Autopilot.GPSNoise, c.Autopilot.EstVelGain = 0.25, 0.75
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{`"xy_p":`, `"idle_speed":`, `"disarm_preflight":`, `"gps_period":`, `"att_noise":`,
		`"est_pos_gain":`, `"est_vel_gain":`, `"control_period":`, `"att_every":`, `"pos_every":`}
	last := -1
	for _, k := range order {
		i := bytes.Index(b, []byte(k))
		if i <= last {
			t.Fatalf("%s at %d, want it after %d in %s", k, i, last, b)
		}
		last = i
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip changed the configuration:\n got %+v\nwant %+v", back, c)
	}
}
