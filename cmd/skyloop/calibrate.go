package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"skyloop/kind/multirotor"
	"skyloop/plan"
)

func newCalibrateCmd() *cobra.Command {
	var (
		preset, wpNav   string
		speed, altitude float64
		seed            uint64
	)
	c := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit the coverage planning energy model (J/m, J/deg) to a multirotor preset's physics",
		Long: `Fly a multirotor preset's calibration flights (straight legs of 20 to 160 m,
turns of 45 to 180 degrees between two 40 m legs, three 90 degree turns) at
the given speed and altitude, as the coverage behaviour flies its turn
points, and fit the planning energy model to the physics battery energy by
least squares: J = J/m x metres + J/deg x degrees + a fixed cost per path
(the start and the stop at its ends, which the planning model leaves out).
Prints every flight, the fit and its residuals, and the embedded model of
the same name (plan/energy.go) to compare. See docs/calibration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, ok := multirotor.PresetConfig(preset)
			if !ok {
				return badInput("--preset %q: no such multirotor preset (iris, crazyflie)", preset)
			}
			cfg.Autopilot.WPNav = wpNav
			if bad := cfg.Validate(); len(bad) > 0 {
				return badInput("--wp-nav %q: %s", wpNav, bad.Err("multirotor").Error())
			}
			if !(speed > 0 && speed <= 20) {
				return badInput("--speed %v: want a speed in (0, 20] m/s", speed)
			}
			if !(altitude > 0 && altitude <= 1000) {
				return badInput("--altitude %v: want an altitude in (0, 1000] m", altitude)
			}
			cal, err := multirotor.Calibrate(&cfg, speed, altitude, seed)
			if err != nil {
				return fmt.Errorf("calibrating %s: %w", preset, err)
			}
			out := cmd.OutOrStdout()
			nav := cal.WPNav
			fmt.Fprintf(out, "%s (wp_nav %s) at %g m/s and %g m, seed %d\n\n", preset, nav, speed, altitude, seed)
			fmt.Fprintln(out, "| flight | length (m) | turned (deg) | time (s) | physics energy (J) | fit (J) | residual |")
			fmt.Fprintln(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
			for _, f := range cal.Flights {
				p := cal.Predict(f.Metres, f.TurnDeg) + cal.Fixed
				fmt.Fprintf(out, "| %s | %.0f | %.0f | %.2f | %.1f | %.1f | %+.1f%% |\n", f.Name, f.Metres, f.TurnDeg, f.Seconds, f.Joules, p, 100*(p/f.Joules-1))
			}
			fmt.Fprintf(out, "\nfit: %.4f J/m, %.4f J/deg, %.1f J per path\n", cal.PerMetre, cal.PerDegree, cal.Fixed)
			name := preset
			if nav != "px4" {
				name += "-" + nav
			}
			if m, err := plan.EnergyModel(name); err == nil && m.Speed == speed && m.Altitude == altitude {
				d := math.Max(math.Abs(cal.PerMetre/m.PerMetre-1), math.Abs(cal.PerDegree/m.PerDegree-1))
				fmt.Fprintf(out, "embedded model %q: %.4f J/m, %.4f J/deg (%.2f%% from this fit)\n", name, m.PerMetre, m.PerDegree, 100*d)
			} else {
				fmt.Fprintf(out, "no embedded model for this flight (models: %s)\n", strings.Join(plan.EnergyModels(), ", "))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&preset, "preset", "iris", "multirotor preset: iris or crazyflie")
	f.StringVar(&wpNav, "wp-nav", "", "the controller's waypoint following: px4 (default) or arducopter")
	f.Float64Var(&speed, "speed", 5, "flight speed, m/s")
	f.Float64Var(&altitude, "altitude", 10, "flight altitude, m")
	f.Uint64Var(&seed, "seed", 1, "seed of the sensor noise")
	return c
}
