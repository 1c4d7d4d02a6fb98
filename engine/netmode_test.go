package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/scenario"
)

// TestNetworkModeKey: network.mode is the engine's (coupled or replay),
// except that on a backend with a mode parameter of its own (wifi, ns3:
// the transmission rate) any other value is the backend's; elsewhere
// other values are refused.
func TestNetworkModeKey(t *testing.T) {
	for _, c := range []struct {
		net, want, err string
	}{
		{net: "{backend: wifi, standard: 80211b, mode: DsssRate11Mbps}", want: `"mode":"DsssRate11Mbps"`},
		{net: "{backend: ns3, standard: 80211b, mode: DsssRate5_5Mbps, epoch: 10ms}", want: `"mode":"DsssRate5_5Mbps"`},
		{net: "{backend: wifi, standard: 80211b, mode: OfdmRate6Mbps}", err: "network.mode"},
		{net: "{backend: impair, mode: coupled, epoch: 10ms}", want: `"mode":"coupled"`},
		{net: "{backend: impair, mode: DsssRate11Mbps, epoch: 10ms}", err: "must be coupled or replay"},
	} {
		sc, err := scenario.Parse("t.yaml", []byte("name: t\nvehicles:\n"+validGroup+"network: "+c.net+"\n"))
		if err == nil {
			var r *engine.Run
			r, err = engine.Build(sc, engine.Options{Registry: registry, CheckOnly: true})
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
