package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns a random stream for one component of a run. The stream is a
// function of (seed, kind, id) only, so adding or removing other components
// never changes it, and the same seed always gives the same numbers.
func Stream(seed uint64, kind string, id int) *rand.Rand {
	s1, s2 := StreamSeed(seed, kind, id)
	return rand.New(rand.NewPCG(s1, s2))
}

// StreamSeed returns the two 64-bit seeds that Stream feeds to its PCG
// generator; external components (ns-3, worker processes) use them to derive
// their own streams.
func StreamSeed(seed uint64, kind string, id int) (uint64, uint64) {
	h := fnv.New64a()
	h.Write([]byte(kind))
	k := h.Sum64()
	a := splitmix(seed ^ splitmix(k))
	b := splitmix(a ^ splitmix(uint64(int64(id))+0x9e3779b97f4a7c15))
	return a, splitmix(b)
}

// splitmix is the SplitMix64 finaliser, a strong 64-bit mixing function.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Hash mixes a seed and three words into 64 random-looking bits. Models use
// it as a counter-based generator: a draw keyed by (seed, sender, receiver,
// packet number) is the same whatever else happens in the run, so adding a
// node or moving one never changes the fate of other nodes' packets.
func Hash(seed, a, b, c uint64) uint64 {
	h := splitmix(seed ^ 0x6a09e667f3bcc909)
	h = splitmix(h ^ a)
	h = splitmix(h ^ b)
	return splitmix(h ^ c)
}

// Unit maps 64 random bits to a float64 uniform in [0, 1).
func Unit(x uint64) float64 { return float64(x>>11) * (1.0 / (1 << 53)) }
