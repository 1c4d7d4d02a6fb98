package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"skyloop/orchestrate"
)

func newNetnsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "netns",
		Short: "Set up, list and remove the vehicles' network namespaces",
		Long: `Runs with isolation: netns give every vehicle i a network namespace <prefix>-i:
wifi_tap 10.0.0.(i+1)/24 into the simulated network (static neighbours, no ARP),
host_veth 10.100.i.2/24 as a direct link to skyloop (10.100.i.1), loopback, and no
other route. skyloop makes them when a run starts and removes them when it ends, also
after Ctrl-C; leftovers of a killed run are removed by the next run with the same
prefix, or by "skyloop netns down". The prefix is "sl-" and the scenario name.

These commands need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN).`,
	}
	var count int
	var prefix string
	up := &cobra.Command{
		Use:   "up (SCENARIO | --count N --prefix P)",
		Short: "Create the namespaces (persistent TAPs, for experiments by hand)",
		Example: `  skyloop netns up ubanc-chain
  skyloop netns up --count 3 --prefix sl-lab
  ip netns exec sl-lab-0 ip addr`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, n := prefix, count
			if len(args) == 1 {
				sc, err := loadScenario(args[0])
				if err != nil {
					return err
				}
				n = 0
				for _, g := range sc.Vehicles {
					n += g.Count
				}
				if p == "" {
					p = orchestrate.Prefix(sc.Name)
				}
			}
			if n < 1 || p == "" {
				return badInput("netns up needs a scenario, or --count and --prefix")
			}
			if err := orchestrate.CheckFree(p); err != nil {
				return usageError{err}
			}
			nt, err := orchestrate.Up(p, n, true)
			if err != nil {
				return err
			}
			for i := range nt.Vehicles {
				v := &nt.Vehicles[i]
				if v.TAP != nil {
					v.TAP.Close() // persistent: the device stays
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-18s wifi_tap %-12s %s  host_veth %s (skyloop %s)\n", v.NS, v.IP, v.MAC, v.NSHost, v.HostIP)
			}
			os.Remove("/run/skyloop/" + p + ".pid") // nobody holds them now
			return nil
		},
	}
	up.Flags().IntVar(&count, "count", 0, "number of vehicles")
	up.Flags().StringVar(&prefix, "prefix", "", "namespace prefix (sl-...)")
	var all bool
	down := &cobra.Command{
		Use:   "down (--prefix P | --all)",
		Short: "Remove namespaces (those of live runs are refused)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := orchestrate.CheckPrivileges(); err != nil {
				return usageError{err}
			}
			var prefixes []string
			switch {
			case all:
				st, err := orchestrate.List()
				if err != nil {
					return err
				}
				for _, s := range st {
					if s.Owner == 0 {
						prefixes = append(prefixes, s.Prefix)
					} else {
						fmt.Fprintf(cmd.ErrOrStderr(), "keeping %s-*: in use by skyloop pid %d\n", s.Prefix, s.Owner)
					}
				}
			case prefix != "":
				prefixes = []string{prefix}
			default:
				return badInput("netns down needs --prefix or --all")
			}
			for _, p := range prefixes {
				if err := orchestrate.Remove(p); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s-*\n", p)
			}
			return nil
		},
	}
	down.Flags().StringVar(&prefix, "prefix", "", "namespace prefix to remove")
	down.Flags().BoolVar(&all, "all", false, "remove every skyloop namespace not held by a running skyloop")
	status := &cobra.Command{
		Use:   "status",
		Short: "List skyloop's namespaces and who holds them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := orchestrate.List()
			if err != nil {
				return err
			}
			if len(st) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no skyloop namespaces")
			}
			for _, s := range st {
				who := "not held by a running skyloop (made by netns up, or left by a killed run)"
				if s.Owner != 0 {
					who = fmt.Sprintf("held by skyloop pid %d", s.Owner)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s-*: %d namespaces, %s\n", s.Prefix, len(s.Namespaces), who)
			}
			return nil
		},
	}
	c.AddCommand(up, down, status)
	return c
}
