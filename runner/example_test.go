package runner_test

import (
	"fmt"
	"strings"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sim"
)

// registry has every component skyloop ships with.
var registry = components.Registry()

// Load a scenario (here the built-in quickstart; scenario.Load reads a
// file), build the run with options that override the file, and execute it
// without writing a run directory.
func ExampleExecute() {
	text, _ := scenarios.Lookup("quickstart")
	sc, err := scenario.Parse("quickstart.yaml", text, registry.Schema())
	if err != nil {
		fmt.Println(err) // file:line: field.path: message, one per problem
		return
	}
	d := 20 * sim.Second
	r, err := engine.Build(sc, engine.Options{Registry: registry, Duration: &d})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := runner.Execute(r, "", runner.Options{}) // "" writes no files; a path writes the run directory
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	fmt.Printf("%s: %d nodes, %v simulated, %d packets sent, PDR %.3f\n", s.Scenario, s.Nodes, sim.Duration(s.DurationNs),
		s.Network.Total.Tx, s.Network.Total.PDR)
	fmt.Println(strings.Join([]string{s.Vehicles[0].Name, s.Vehicles[0].Mode}, " is in mode "))
	// Output:
	// quickstart: 11 nodes, 20s simulated, 3672 packets sent, PDR 0.948
	// drone-0 is in mode goto
}
