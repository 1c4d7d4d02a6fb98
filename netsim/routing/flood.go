package routing

import "skyloop/sim"

// flood is blind flooding: every node rebroadcasts every data packet the
// first time it hears it, while its TTL lasts; the destination of a
// unicast packet keeps it. There is no control traffic.
type flood struct{ b *Backend }

func (*flood) start(sim.Time)                         {}
func (*flood) timer(sim.Time, int32, uint8, uint64)   {}
func (*flood) control(sim.Time, int32, int32, []byte) {}
func (*flood) linkFailed(sim.Time, int32, int32)      {}
func (*flood) deliver(sim.Time, int32, uint32)        {}
func (f *flood) unicast(t sim.Time, n int32, a uint32, ttl uint8, _ bool) {
	f.b.forward(n, -1, a, ttl)
}
func (f *flood) broadcast(t sim.Time, n int32, a uint32, ttl uint8, _ bool) {
	f.b.forward(n, -1, a, ttl)
}
