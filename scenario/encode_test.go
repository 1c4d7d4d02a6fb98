package scenario

import (
	"math"
	"reflect"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
)

// TestEncodeYAMLRoundTrip: a scenario written by EncodeYAML reads back
// to the same values, strings that YAML would read as something else
// (yes, 3d, 10%, a colon) and floats that need every digit included.
func TestEncodeYAMLRoundTrip(t *testing.T) {
	type params struct {
		Words   []string     `yaml:"words" json:"words"`
		F       []float64    `yaml:"f" json:"f"`
		D       sim.Duration `yaml:"d" json:"d"`
		Pos     []geom.Vec3  `yaml:"pos" json:"pos"`
		Nothing *geom.Vec3   `yaml:"nothing" json:"nothing"`
	}
	want := params{
		Words: []string{"yes", "No", "on", "null", "3d", "10%", "a: b", "# x", "- y", "DsssRate11Mbps", "ns-3.37", "80211b", "", " lead", "é", "1e3", "0x10", ".inf", "'q'", `"dq"`, "tab\there"},
		F:     []float64{0.1164, 1.0 / 3, 1e-300, 5e20, -0, math.MaxFloat64, 47.397742},
		D:     1500 * sim.Microsecond,
		Pos:   []geom.Vec3{{X: 1, Y: -2.5, Z: 1e-9}},
	}
	tree, err := Tree(Map{{Key: "name", Value: "rt"}, {Key: "p", Value: want}})
	if err != nil {
		t.Fatal(err)
	}
	text := EncodeYAML(tree)
	doc, err := ParseDocument("rt.yaml", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var got struct {
		Name string `yaml:"name"`
		P    params `yaml:"p"`
	}
	if !doc.Decode(doc.Root, "", &got) {
		t.Fatalf("%v\n%s", doc.Err(), text)
	}
	if got.Name != "rt" || !reflect.DeepEqual(got.P, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v\n%s", got.P, want, text)
	}
}

// TestMapOrder: a Map keeps its keys in order through Tree.
func TestMapOrder(t *testing.T) {
	tree, err := Tree(Map{{Key: "z", Value: 1}, {Key: "a", Value: Map{{Key: "c", Value: true}, {Key: "b", Value: nil}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(EncodeYAML(tree)), "z: 1\na:\n  c: true\n  b: null\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
