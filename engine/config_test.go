package engine_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/netsim/ideal"
	"skyloop/scenario"
)

// countingParams are the parameters of a backend that counts how often it
// is constructed.
type countingParams struct {
	Fail bool `yaml:"fail" json:"fail"`
}

func (*countingParams) Validate() fields.Errors { return nil }

// countingRegistry is the core registry with a backend "counting" that
// counts its constructions in *made and fails to start when asked to.
func countingRegistry(made *int) *engine.Registry {
	reg := engine.Core()
	reg.AddBackend(netsim.BackendSpec{
		Name:   "counting",
		Params: func() netsim.Params { return &countingParams{} },
		New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			*made++
			if p.(*countingParams).Fail {
				return nil, errors.New("no radio today")
			}
			return ideal.New(tr), nil
		},
	})
	return reg
}

const countingScenario = `name: t
duration: 1s
vehicles:
  - name: d
    kind: pointmass
    count: 2
    spawn: {layout: line, spacing: 5}
    behaviors: [{type: beacon, period: 100ms}]
nodes:
  - {name: base, position: [0, 0, 0], behaviors: [{type: traffic, rate: 8000, size: 100}]}
network:
  backend: counting
  fail: FAIL
`

// TestValidateConstructsNothing: Validate decodes and checks, starting no
// backend; Build on its configuration constructs the run without reading
// the scenario's undecoded parts again (they are gone here), to the same
// effective configuration.
func TestValidateConstructsNothing(t *testing.T) {
	made := 0
	reg := countingRegistry(&made)
	sc, err := scenario.Parse("t.yaml", []byte(strings.Replace(countingScenario, "FAIL", "false", 1)), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.Validate(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if made != 0 {
		t.Fatalf("Validate constructed the backend %d times", made)
	}
	want := cfg.Describe()
	// What Build may read: the decoded values, not the file's raw parts.
	sc.Network = scenario.Raw{}
	for i := range sc.Vehicles {
		sc.Vehicles[i].Params, sc.Vehicles[i].Behaviors = scenario.Raw{}, nil
	}
	sc.Nodes[0].Behaviors = nil
	r, err := cfg.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if made != 1 {
		t.Errorf("Build constructed the backend %d times, want 1", made)
	}
	if got := r.Describe(); got != want || !strings.Contains(got, "2 vehicles, 1 fixed nodes, counting network") {
		t.Errorf("built %q, validated %q", got, want)
	}
	for id, typ := range map[int]string{0: "beacon", 1: "beacon", 2: "traffic"} {
		if !r.HasBehavior(netsim.NodeID(id), typ) {
			t.Errorf("node %d does not run %s", id, typ)
		}
	}
}

// TestBuildFailureLocated: a backend that cannot be constructed is
// reported at the network section's line, as a scenario error, though
// Build no longer records problems on the scenario.
func TestBuildFailureLocated(t *testing.T) {
	made := 0
	reg := countingRegistry(&made)
	sc, err := scenario.Parse("t.yaml", []byte(strings.Replace(countingScenario, "FAIL", "true", 1)), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Build(sc, engine.Options{Registry: reg})
	var es scenario.Errors
	if !errors.As(err, &es) || err.Error() != "t.yaml:12: network: no radio today" {
		t.Fatalf("got %v (%T), want t.yaml:12: network: no radio today", err, err)
	}
}

// TestOwnModeDeclared: every backend whose parameters have a `mode` key
// says so (BackendSpec.OwnMode), so that the engine tells the rate from
// network.mode without looking into the parameter struct.
func TestOwnModeDeclared(t *testing.T) {
	reg := components.Registry()
	for _, name := range reg.BackendNames() {
		bs, _ := reg.Backend(name)
		has := false
		typ := reflect.TypeOf(bs.Params()).Elem()
		for i := 0; i < typ.NumField(); i++ {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			has = has || tag == "mode"
		}
		if has != bs.OwnMode {
			t.Errorf("backend %s: parameters with a mode key: %v, OwnMode %v", name, has, bs.OwnMode)
		}
	}
}
