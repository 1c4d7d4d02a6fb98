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
	checkNetwork(t, []networkCase{
		{net: "{backend: wifi, standard: 80211b, mode: DsssRate11Mbps}", want: `"mode":"DsssRate11Mbps"`},
		{net: "{backend: ns3, standard: 80211b, mode: DsssRate5_5Mbps, epoch: 10ms}", want: `"mode":"DsssRate5_5Mbps"`},
		{net: "{backend: wifi, standard: 80211b, mode: OfdmRate6Mbps}", err: "network.mode"},
		{net: "{backend: impair, mode: coupled, epoch: 10ms}", want: `"mode":"coupled"`},
		{net: "{backend: impair, mode: DsssRate11Mbps, epoch: 10ms}", err: "must be coupled or replay"},
	})
}

// TestNS3EpochKey: network.epoch is the engine's key, and the ns-3 backend,
// which synchronises at most once per epoch of its own, gets it too: a file
// with epoch 1ms synchronises ns-3 every 1 ms (it stayed at the 10 ms
// default, so deliveries were consumed up to 10 ms late whatever the file
// said); without the key ns-3 keeps its 10 ms. (The backend's parameters
// come right after arp in the effective network.)
func TestNS3EpochKey(t *testing.T) {
	checkNetwork(t, []networkCase{
		{net: "{backend: ns3, standard: 80211b, epoch: 1ms}", want: `"arp":"static","epoch":"1ms"`},
		{net: "{backend: ns3, standard: 80211b, epoch: 25ms}", want: `"arp":"static","epoch":"25ms"`},
		{net: "{backend: ns3, standard: 80211b}", want: `"arp":"static","epoch":"10ms"`},
	})
}

// TestAODVControlKey: network.aodv_control (link or routed) belongs to the
// native routing layer's AODV; it is refused with another protocol, with
// an unknown value, and on ns-3 (whose AODV always routes its control).
func TestAODVControlKey(t *testing.T) {
	checkNetwork(t, []networkCase{
		{net: "{backend: wifi, routing: aodv, aodv_control: routed}", want: `"aodv_control":"routed"`},
		{net: "{backend: wifi, routing: aodv, aodv_control: link}", want: `"aodv_control":"link"`},
		{net: "{backend: wifi, routing: aodv}", want: `"routing":"aodv"`},
		{net: "{backend: wifi, routing: olsr, aodv_control: routed}", err: "applies to routing: aodv only"},
		{net: "{backend: wifi, routing: aodv, aodv_control: rfc}", err: `must be one of link, routed, got "rfc"`},
		{net: "{backend: ns3, routing: aodv, aodv_control: routed}", err: "routes with its own protocols"},
	})
}

// TestProfileInConfig: a scenario names the Wi-Fi profile the same way on
// the native and the ns-3 backend (it was an unknown field on ns3), the
// run's configuration (config.json) records it on both, the default
// included, and an unknown profile is an error at network.profile that
// names it.
func TestProfileInConfig(t *testing.T) {
	checkNetwork(t, []networkCase{
		{net: "{backend: ns3, standard: 80211b, profile: ns-3.26}", want: `"profile":"ns-3.26"`},
		{net: "{backend: wifi, standard: 80211b, profile: ns-3.26}", want: `"profile":"ns-3.26"`},
		{net: "{backend: ns3, standard: 80211b}", want: `"profile":"ns-3.37"`},
		{net: "{backend: wifi, standard: 80211b}", want: `"profile":"ns-3.37"`},
		{net: "{backend: ns3, standard: 80211b, profile: ns-3.26, preamble_detection: true}", want: `"preamble_detection":false`},
		{net: "{backend: ns3, profile: ns-3.25}", err: `network.profile: unknown profile "ns-3.25": want one of ns-3.37, ns-3.26`},
	})
}

// networkCase is a network section, and what its effective configuration
// must contain (want) or the error it must give (err).
type networkCase struct {
	net, want, err string
}

// checkNetwork builds a scenario with each case's network section.
func checkNetwork(t *testing.T, cases []networkCase) {
	t.Helper()
	for _, c := range cases {
		sc, err := scenario.Parse("t.yaml", []byte("name: t\nvehicles:\n"+validGroup+"network: "+c.net+"\n"), registry.Schema())
		if err == nil {
			var r *engine.Config
			r, err = engine.Validate(sc, engine.Options{Registry: registry})
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
