package routing

// olsrPairs maps a pair of node ids (a two-hop tuple's neighbour and
// two-hop node) to the tuple's position in its set. It is a hash table
// with open addressing and linear probing; a removal shifts the entries
// after it back (no tombstones), so a table whose size stays about the
// same never allocates. Lookups only: nothing ever iterates over it, so
// its layout cannot change any result.
type olsrPairs struct {
	slots []olsrPairSlot // a power of two long, or empty
	shift uint           // 64 - log2(len(slots))
	n     int            // entries
}

type olsrPairSlot struct {
	key uint64
	pos int32 // position+1; 0: empty
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// home is the slot where key's probe starts (Fibonacci hashing).
func (p *olsrPairs) home(key uint64) int {
	return int((key * 0x9e3779b97f4a7c15) >> p.shift)
}

// find returns the slot holding key, or the empty slot where it would go.
func (p *olsrPairs) find(key uint64) (int, bool) {
	mask := len(p.slots) - 1
	for i := p.home(key); ; i = (i + 1) & mask {
		s := &p.slots[i]
		if s.pos == 0 {
			return i, false
		}
		if s.key == key {
			return i, true
		}
	}
}

// get returns the position stored for key, or -1.
func (p *olsrPairs) get(key uint64) int {
	if p.n == 0 {
		return -1
	}
	if i, ok := p.find(key); ok {
		return int(p.slots[i].pos - 1)
	}
	return -1
}

// put stores pos for key (which must not be there yet).
func (p *olsrPairs) put(key uint64, pos int) {
	if 2*(p.n+1) > len(p.slots) {
		p.grow()
	}
	i, _ := p.find(key)
	p.slots[i] = olsrPairSlot{key: key, pos: int32(pos + 1)}
	p.n++
}

func (p *olsrPairs) grow() {
	old := p.slots
	p.slots = make([]olsrPairSlot, max(16, 2*len(old)))
	p.shift = 64
	for 1<<(64-p.shift) < len(p.slots) {
		p.shift--
	}
	p.n = 0
	for _, s := range old {
		if s.pos != 0 {
			i, _ := p.find(s.key)
			p.slots[i] = s
			p.n++
		}
	}
}

// del removes key if it is there.
func (p *olsrPairs) del(key uint64) {
	if p.n == 0 {
		return
	}
	i, ok := p.find(key)
	if !ok {
		return
	}
	mask := len(p.slots) - 1
	for j := (i + 1) & mask; p.slots[j].pos != 0; j = (j + 1) & mask {
		// The entry at j may move to the hole at i unless its probe
		// starts cyclically after i and at or before j.
		k := p.home(p.slots[j].key)
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		p.slots[i] = p.slots[j]
		i = j
	}
	p.slots[i] = olsrPairSlot{}
	p.n--
}

// reset empties the table, keeping its room.
func (p *olsrPairs) reset() {
	clear(p.slots)
	p.n = 0
}
