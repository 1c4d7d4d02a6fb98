// Package tracecsv is the one definition of the packet files every run
// writes, trace.csv and deliveries.csv (their columns are fixed here), shared
// by the engine and the netbots testbed so that their files stay
// byte-comparable.
package tracecsv

import (
	"skyloop/netsim"
	"skyloop/record"
)

// Headers of trace.csv and deliveries.csv. deliveries.csv's rx_dbm is
// the received power in dBm (three decimals), empty where the backend does
// not model it.
const (
	TraceHeader      = "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason"
	DeliveriesHeader = "t_rx_ns,t_tick_ns,src,dst,seq,t_gen_ns,t_send_ns,bytes,kind,latency_ns,rx_dbm"
)

// WriteTrace appends e to trace.csv: the reason column is empty except for
// drops.
func WriteTrace(c *record.CSV, e *netsim.TraceEvent) {
	p := e.P
	c.Str(e.Type.String()).Int(int64(e.T)).Int(int64(p.Src)).Int(int64(e.Node)).Uint(uint64(p.Seq)).
		Int(int64(p.TGen)).Int(int64(p.Size)).Str(p.Kind.String())
	if e.Type == netsim.EvDrop {
		c.Str(e.Reason.String())
	} else {
		c.Str("")
	}
	c.End()
}
