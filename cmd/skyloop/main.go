// Command skyloop is the network-in-the-loop co-simulator for drone swarms
// and robot teams. Run `skyloop --help` for the commands.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"skyloop/components"
	"skyloop/scenario"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // the run failed
	exitBadInput = 2 // bad scenario, flags or arguments
	// A command stopped by a signal exits with 128 + its number: 130
	// (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
)

// usageError marks errors caused by the user's input.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// registry has every vehicle kind, behaviour and network backend skyloop
// ships with; every command builds and checks runs with it.
var registry = components.Registry()

func main() {
	os.Exit(run(os.Args[1:]))
}

// invocation is the command line being run, as a user would type it
// again (kept in a sweep shard's manifest).
var invocation []string

func run(args []string) int {
	defer sigs.listen()()
	// Every warning and diagnostic, the library's too, in one style.
	slog.SetDefault(newLogger(os.Stderr, slog.LevelInfo))
	invocation = append([]string{"skyloop"}, args...)
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "skyloop:", err)
	var se scenario.Errors
	var ue usageError
	var ie interrupted
	switch {
	case errors.As(err, &ie):
		return ie.exitCode()
	case errors.As(err, &se), errors.As(err, &ue):
		return exitBadInput
	}
	return exitFailure
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "skyloop",
		Short: "Network-in-the-loop co-simulator for drone swarms and robot teams",
		Long: `skyloop closes the loop physics -> flight control -> mission logic -> network -> back
in one deterministic program: the same scenario and seed give byte-identical outputs.

Start with:
  skyloop run quickstart          run the built-in quickstart scenario
  skyloop validate FILE.yaml      check a scenario without running it

Exit codes: 0 success, 1 run failure, 2 bad input (scenario, flags), 128+N
stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). Every command stops
alike on SIGINT, SIGTERM and SIGHUP: runs and sweeps at the end of a tick,
keeping what they document and removing their temporary files.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(), newValidateCmd(), newBenchCmd(), newSweepCmd(), newSummarizeCmd(), newVersionCmd(), newScenariosCmd(), newBehaviorsCmd(), newControllersCmd(), newNetnsCmd(), newReportCmd(), newViewCmd(), newRelayCmd(), newSpinCmd(), newCalibrateCmd(), newFirmwareCmd())
	return root
}
