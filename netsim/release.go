package netsim

// Graveyard holds packets a backend is done with but that the deliveries it
// last returned may still refer to. Backends call Bury when a packet's last
// reference goes and Flush at the start of their next method call.
type Graveyard struct {
	dead []*Packet
}

// Bury schedules p to be freed at the next Flush.
func (g *Graveyard) Bury(p *Packet) { g.dead = append(g.dead, p) }

// Flush frees every buried packet.
func (g *Graveyard) Flush() {
	for i, p := range g.dead {
		p.Free()
		g.dead[i] = nil
	}
	g.dead = g.dead[:0]
}
