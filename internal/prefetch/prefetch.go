// Package prefetch asks the processor to bring memory into its caches
// ahead of use. A hot loop that visits records scattered over a large
// array (a radio frame's receivers in a 10,000-node swarm) spends most of
// its time waiting for each record in turn; naming the record a few
// iterations ahead lets those waits overlap. A hint changes no result:
// where the architecture has no such instruction, Line does nothing.
package prefetch
