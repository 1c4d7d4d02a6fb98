package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/scenarios"
	"skyloop/version"
)

func newValidateCmd() *cobra.Command {
	var effective, asJSON bool
	c := &cobra.Command{
		Use:   "validate SCENARIO...",
		Short: "Check scenarios without running them",
		Long: `Check one or more scenarios (files or built-in names) completely, component
parameters included, without running or writing anything. Every problem is
printed as file:line: field.path: message, and the exit code is 2 if any
scenario has a problem.

With --effective, print the configuration a run would use, every default
filled in, as a scenario file (the same as a run's config.yaml, which
skyloop run runs again to the same outputs); with --effective --json, as
the run's config.json has it (parameters under params, the paths that
experiment files and sweep summaries use).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput("validate needs at least one scenario")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed []error
			for _, a := range args {
				sc, err := loadScenario(a)
				if err == nil {
					var r *engine.Config
					if r, err = engine.Validate(sc, engine.Options{Registry: registry}); err == nil {
						switch {
						case effective && asJSON:
							b, _ := json.MarshalIndent(r.Effective(), "", "  ")
							fmt.Fprintln(cmd.OutOrStdout(), string(b))
						case effective:
							b, err := r.EffectiveScenario()
							if err != nil {
								return err
							}
							fmt.Fprint(cmd.OutOrStdout(), string(b))
						default:
							fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s)\n", a, r.Describe())
						}
						continue
					}
				}
				failed = append(failed, err)
			}
			if len(failed) == 1 {
				return failed[0]
			}
			if len(failed) > 1 {
				var msgs []string
				for _, e := range failed {
					msgs = append(msgs, e.Error())
				}
				return badInput("%s", strings.Join(msgs, "\n"))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&effective, "effective", false, "print the effective configuration as a scenario file (a run's config.yaml)")
	c.Flags().BoolVar(&asJSON, "json", false, "with --effective: print it as a run's config.json has it")
	return c
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the skyloop version and build information",
		Long: `Print the skyloop version, the commit it was built from (vcs.revision,
vcs.time, vcs.modified) and Go, OS and architecture. go build in a clone stamps
the commit into the program; a program without that stamp (go run, a git
worktree, GOFLAGS=-buildvcs=false) reads it from its source clone with git when
the clone is still there, and says so (vcs.source).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info := version.Info()
			keys := make([]string, 0, len(info))
			for k := range info {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintf(cmd.OutOrStdout(), "skyloop %s\n", version.Describe(info))
			for _, k := range keys {
				if k != "skyloop" {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s: %s\n", k, info[k])
				}
			}
			return nil
		},
	}
}

func newScenariosCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios (run one with: skyloop run NAME) and experiments (skyloop sweep NAME)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			width := 0 // the longest name, so that the descriptions line up
			for _, names := range [][]string{scenarios.Names(), scenarios.Experiments()} {
				for _, n := range names {
					width = max(width, len(n))
				}
			}
			for _, c := range scenarios.Collections() {
				for _, n := range scenarios.CollectionScenarios(c) {
					width = max(width, len(n))
				}
			}
			describe := func(names []string) {
				for _, n := range names {
					b, _ := scenarios.Lookup(n)
					desc := ""
					for _, line := range strings.Split(string(b), "\n") {
						if strings.HasPrefix(line, "description:") {
							desc = strings.TrimSpace(strings.TrimPrefix(line, "description:"))
						}
					}
					fmt.Fprintf(w, "%-*s  %s\n", width, n, desc)
				}
			}
			describe(scenarios.Names())
			var inColl []string
			for _, c := range scenarios.Collections() {
				inColl = append(inColl, scenarios.CollectionScenarios(c)...)
			}
			fmt.Fprintf(w, "\nThe experiments' base scenarios (skyloop run DIR/NAME):\n")
			describe(inColl)
			fmt.Fprintf(w, "\nExperiments (skyloop sweep NAME, or a whole collection: %s):\n", strings.Join(scenarios.Collections(), ", "))
			describe(scenarios.Experiments())
			return nil
		},
	}
}

func newBehaviorsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "behaviors",
		Short: "List the built-in behaviours and their default parameters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range registry.Behaviors() {
				n := s.Name
				b, _ := json.Marshal(s.Params())
				where := []string{}
				if s.Vehicle {
					where = append(where, "vehicles")
				}
				if s.Fixed {
					where = append(where, "fixed nodes")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s (on %s)\n  %s\n  defaults: %s\n\n", n, strings.Join(where, ", "), s.Doc, b)
			}
			return nil
		},
	}
}

func newControllersCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "controllers",
		Short: "List the controllers a vehicle kind can be flown by instead of its own (params: {controller: NAME})",
		Long: "List the controllers a vehicle kind can be flown by instead of its own, chosen with\n" +
			"params: {controller: NAME}, with their parameters' defaults (under params.<key>).\n" +
			"The multirotor's own controller is px4like, skyloop's PX4-like stand-in.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, k := range registry.KindNames() {
				ks, _ := registry.Kind(k)
				for _, c := range registry.Controllers(k) {
					b, _ := json.Marshal(c.Params())
					fmt.Fprintf(cmd.OutOrStdout(), "%s (kind %s; its own: %s; parameters under params.%s)\n  %s\n  defaults: %s\n\n",
						c.Name, k, ks.Controller, c.Key, c.Doc, b)
				}
			}
			return nil
		},
	}
}
