package netsim

import (
	"fmt"

	"skyloop/sim"
)

// EventType is the type of a trace event.
type EventType uint8

// Trace event types.
const (
	EvTx   EventType = iota // a sender handed a packet to the network
	EvRx                    // a packet arrived at a receiver
	EvDrop                  // a packet will never reach a receiver
)

// String returns "tx", "rx" or "drop".
func (e EventType) String() string {
	switch e {
	case EvTx:
		return "tx"
	case EvRx:
		return "rx"
	case EvDrop:
		return "drop"
	}
	return fmt.Sprintf("ev%d", e)
}

// DropReason says why a packet did not reach a receiver.
type DropReason uint8

// Drop reasons. The names are what trace.csv and summaries print.
const (
	DropNone        DropReason = iota
	DropRxError                // lost on the channel (loss model)
	DropQueue                  // sender's queue was full
	DropRange                  // receiver out of communication range
	DropSensitivity            // received power below the receiver sensitivity
	DropCollision              // interference / collision
	DropErrorModel             // PHY error model rejected the frame
	DropRetryLimit             // unicast retries exhausted
	DropBusy                   // receiver busy (transmitting or locked on another frame)
	DropNoRoute                // no route to the destination
	DropTTL                    // hop limit reached
	DropEndOfRun               // still in flight when the run ended
	numDropReasons
)

var dropNames = [...]string{"", "rx_error", "queue", "range", "below_sensitivity", "collision", "error_model", "retry_limit", "busy", "no_route", "ttl", "end_of_run"}

// String returns the reason's name.
func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("reason%d", r)
}

// NumDropReasons is the number of defined drop reasons, DropNone included.
const NumDropReasons = int(numDropReasons)

// TraceEvent is one tx, rx or drop. For tx, Node is the packet's
// destination (Broadcast for broadcasts); for rx and drop it is the
// receiver concerned, so a broadcast lost at three receivers gives three
// drop events.
type TraceEvent struct {
	Type    EventType
	T       sim.Time
	P       *Packet
	Node    NodeID
	Reason  DropReason
	RxPower float64 // dBm, NaN when not modelled
}

// Tracer receives every trace event of a run, in the order the backend
// produces them. The event and its packet are only valid during the call.
type Tracer interface {
	Trace(e *TraceEvent)
}

// Tracers fans events out to several tracers in order.
type Tracers []Tracer

// Trace passes e to each tracer in turn.
func (ts Tracers) Trace(e *TraceEvent) {
	for _, t := range ts {
		t.Trace(e)
	}
}

// TraceFunc adapts a function to the Tracer interface.
type TraceFunc func(e *TraceEvent)

// Trace calls f(e).
func (f TraceFunc) Trace(e *TraceEvent) { f(e) }

// DropCounter is a Tracer whose consumers may need only the number of drop
// events, not each receiver's: metrics count drops, and only a per-packet
// trace file names the receivers. A backend that asks CountsDrops at Start
// and gets true may report several drops of one packet, with one reason,
// time and power, in one TraceDrops call instead of one Trace call per
// receiver. Results are the same; only the work differs.
type DropCounter interface {
	Tracer
	// CountsDrops reports whether drop events may be counted in bulk
	// for the rest of the run.
	CountsDrops() bool
	// TraceDrops stands for n drop events like e, at receivers the
	// backend does not name (e.Node means nothing).
	TraceDrops(e *TraceEvent, n int)
}

// ReceptionCounter is a Tracer whose consumers may need only the number
// of reception events, not each receiver's: metrics count receptions, and
// only a per-packet trace file or a viewer names the receivers. A backend
// that asks CountsReceptions at Start and gets true may report the
// receptions of one packet at one time in one TraceReceptions call
// instead of one Trace call per receiver. Results are the same; only the
// work differs.
type ReceptionCounter interface {
	Tracer
	// CountsReceptions reports whether reception events may be counted
	// in bulk for the rest of the run.
	CountsReceptions() bool
	// TraceReceptions stands for n reception events like e, at receivers
	// the backend does not name (e.Node means nothing).
	TraceReceptions(e *TraceEvent, n int)
}
