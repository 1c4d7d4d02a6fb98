package main

import (
	"fmt"
	"strings"

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

skyloop records every namespace it makes (in /run/skyloop/<prefix>.netns, written
before each is made) and only ever removes what a record lists: never another
prefix's, never a running skyloop's (unless netns down --force), and never a
namespace it did not make, whatever its name.

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
			if err := orchestrate.CheckFree(p, n); err != nil {
				return usageError{err}
			}
			nt, err := orchestrate.Up(p, n, true)
			if err != nil {
				return err
			}
			for i := range nt.Vehicles {
				v := &nt.Vehicles[i]
				fmt.Fprintf(cmd.OutOrStdout(), "%-18s wifi_tap %-12s %s  host_veth %s (skyloop %s)\n", v.NS, v.IP, v.MAC, v.NSHost, v.HostIP)
			}
			nt.Release() // the persistent TAPs and the namespaces stay, for netns down
			return nil
		},
	}
	up.Flags().IntVar(&count, "count", 0, "number of vehicles")
	up.Flags().StringVar(&prefix, "prefix", "", "namespace prefix (sl-...)")
	var all, force bool
	down := &cobra.Command{
		Use:   "down (--prefix P | --all) [--force]",
		Short: "Remove the namespaces skyloop made (those of live runs are refused)",
		Long: `Remove the namespaces skyloop recorded making: with --prefix, those of exactly that
prefix (not those of a longer prefix: --prefix sl-x leaves sl-x-b-0, which belongs to
sl-x-b); with --all, those of every prefix whose run has ended. Namespaces of a running
skyloop are left unless --force is given, and namespaces skyloop did not make are
never removed, whatever their names. Prints what it removed and what it left, and why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := orchestrate.CheckPrivileges(); err != nil {
				return usageError{err}
			}
			var m orchestrate.Removal
			var err error
			switch {
			case all && prefix != "":
				return badInput("netns down takes --prefix or --all, not both")
			case all:
				m, err = orchestrate.RemoveAll(force)
			case prefix != "":
				m, err = orchestrate.Remove(prefix, force)
			default:
				return badInput("netns down needs --prefix or --all")
			}
			w := cmd.OutOrStdout()
			if len(m.Removed) == 0 {
				fmt.Fprintln(w, "removed no namespace")
			} else {
				fmt.Fprintf(w, "removed %s\n", strings.Join(m.Removed, ", "))
			}
			for _, k := range m.Kept {
				fmt.Fprintf(w, "left %s: %s\n", k.Name, k.Why)
			}
			return err
		},
	}
	down.Flags().StringVar(&prefix, "prefix", "", "remove the namespaces skyloop made under exactly this prefix")
	down.Flags().BoolVar(&all, "all", false, "remove the namespaces skyloop made whose run has ended")
	down.Flags().BoolVar(&force, "force", false, "also remove the namespaces of a running skyloop (its programs lose their network)")
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
				if !s.Recorded {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: named like skyloop's but not made by skyloop (no record); skyloop leaves them alone\n",
						strings.Join(s.Namespaces, ", "))
					continue
				}
				who := "not held by a running skyloop (made by netns up, or left by a killed run)"
				if s.Owner > 0 {
					who = fmt.Sprintf("held by skyloop pid %d", s.Owner)
				} else if s.Owner != 0 {
					who = "held by a skyloop that is starting"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s-*: %d namespaces, %s\n", s.Prefix, len(s.Namespaces), who)
			}
			return nil
		},
	}
	c.AddCommand(up, down, status)
	return c
}
