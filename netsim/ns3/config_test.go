package ns3_test

import (
	"encoding/json"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/scenario"
)

// TestProfileInConfig: a scenario names the Wi-Fi profile the same way on
// the native and the ns-3 backend (it was an unknown field on ns3), the
// run's configuration (config.json) records it on both, the default
// included, and an unknown profile is an error at network.profile that
// names it.
func TestProfileInConfig(t *testing.T) {
	reg := components.Registry()
	for _, c := range []struct{ net, want, err string }{
		{net: "{backend: ns3, standard: 80211b, profile: ns-3.26}", want: `"profile":"ns-3.26"`},
		{net: "{backend: wifi, standard: 80211b, profile: ns-3.26}", want: `"profile":"ns-3.26"`},
		{net: "{backend: ns3, standard: 80211b}", want: `"profile":"ns-3.37"`},
		{net: "{backend: wifi, standard: 80211b}", want: `"profile":"ns-3.37"`},
		{net: "{backend: ns3, standard: 80211b, profile: ns-3.26, preamble_detection: true}", want: `"preamble_detection":false`},
		{net: "{backend: ns3, profile: ns-3.25}", err: `network.profile: unknown profile "ns-3.25": want one of ns-3.37, ns-3.26`},
	} {
		text := "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 2, spawn: {layout: line, spacing: 1}}\nnetwork: " + c.net + "\n"
		sc, err := scenario.Parse("t.yaml", []byte(text), reg.Check)
		if err == nil {
			var r *engine.Run
			r, err = engine.Build(sc, engine.Options{Registry: reg, CheckOnly: true})
			if err == nil {
				b, _ := json.Marshal(r.Effective()["network"])
				if !strings.Contains(string(b), c.want) {
					t.Errorf("%s: effective network %s, want %s", c.net, b, c.want)
				}
			}
		}
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.net, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.net, err, c.err)
		}
	}
}
