package wifi

import (
	"math"

	"skyloop/geom"
	"skyloop/sim"
)

// speedOfLight is in m/s.
const speedOfLight = 299792458.0

// timing holds a standard's MAC and PHY constants (IEEE 802.11, as in
// ns-3's wifi-standard-constants).
type timing struct {
	slot, sifs, difs sim.Duration
	cwMin, cwMax     int
	preamble         sim.Duration // part of the PHY preamble not checked by the error model
	header           sim.Duration // PHY header, checked at the header mode
	headerMode       Mode
	ofdm             bool
}

func timingFor(standard string) timing {
	if standard == "80211b" {
		h, _ := ModeByName("DsssRate1Mbps")
		return timing{slot: 20 * sim.Microsecond, sifs: 10 * sim.Microsecond, difs: 50 * sim.Microsecond, cwMin: 31, cwMax: 1023,
			preamble: 144 * sim.Microsecond, header: 48 * sim.Microsecond, headerMode: h}
	}
	h, _ := ModeByName("OfdmRate6Mbps")
	return timing{slot: 9 * sim.Microsecond, sifs: 16 * sim.Microsecond, difs: 34 * sim.Microsecond, cwMin: 15, cwMax: 1023,
		preamble: 16 * sim.Microsecond, header: 4 * sim.Microsecond, headerMode: h, ofdm: true}
}

// Frame sizes: a UDP/IPv4 packet becomes an 802.11 data frame with LLC/SNAP
// (8), the MAC header (24) and the FCS (4); an ACK is 14 bytes.
const (
	macOverhead = 8 + 24 + 4
	ackBytes    = 14
)

// duration returns the air time of a PSDU of n bytes at mode m.
func (tm *timing) duration(m Mode, n int) sim.Duration {
	if tm.ofdm {
		ndbps := m.RateBps * 4e-6
		sym := math.Ceil((16 + 8*float64(n) + 6) / ndbps)
		return tm.preamble + tm.header + sim.Duration(sym)*4*sim.Microsecond
	}
	us := math.Ceil(8 * float64(n) / (m.RateBps / 1e6))
	return tm.preamble + tm.header + sim.Duration(us)*sim.Microsecond
}

// dbmToW converts dBm to watts. exp(x ln 10 / 10) is 10^(x/10) to the
// last bit or two, at a third of math.Pow's cost (math.Pow was 12% of a
// 100-node Wi-Fi run); every reference run's outputs stayed identical.
func dbmToW(dbm float64) float64 { return math.Exp((dbm - 30) * (math.Ln10 / 10)) }

// wToDbm converts watts to dBm.
func wToDbm(w float64) float64 { return 10*math.Log10(w) + 30 }

// noiseW is the thermal noise of a 20 MHz channel with noise figure nf
// (dB), as ns-3 computes it (Boltzmann 1.3803e-23 J/K, 290 K). ns-3 3.37
// takes 20 MHz for 802.11b receptions too: DsssPhy::GetRxChannelWidth
// returns 20 when the PHY's channel is wider than 20 MHz, as the 22 MHz
// DSSS channel is (TestPDRvsDistanceMatchesNS3 confirms it: 22 MHz would
// move the 1 Mbit/s PDR curve in by about 5 m).
func noiseW(nf float64) float64 { return 1.3803e-23 * 290 * 20e6 * math.Pow(10, nf/10) }

// rxPower returns the received power (dBm) from a at b, before fading:
// the transmitted power plus the antenna gains, minus the path loss.
func (b *Backend) rxPower(a, c geom.Vec3) float64 {
	p := &b.p
	tx := p.TxPower + p.TxGain + p.RxGain
	d := a.Dist(c)
	switch p.Loss {
	case LogDistance:
		if d <= p.RefDistance {
			return tx - p.RefLoss
		}
		return tx - p.RefLoss - 10*p.Exponent*math.Log10(d/p.RefDistance)
	case Friis:
		return tx - friisLoss(d, p.Frequency)
	case TwoRay:
		ht, hr := a.Z+p.AntennaZ, c.Z+p.AntennaZ
		lambda := speedOfLight / p.Frequency
		cross := 4 * math.Pi * ht * hr / lambda
		if d <= cross || ht <= 0 || hr <= 0 {
			return tx - friisLoss(d, p.Frequency)
		}
		return tx + 10*math.Log10(ht*ht*hr*hr/(d*d*d*d))
	case RangeLoss:
		if d <= p.MaxRange {
			return tx
		}
		return -1000
	}
	return -1000
}

// friisLoss is the free-space loss in dB (0 at d = 0, never negative).
func friisLoss(d, freq float64) float64 {
	if d <= 0 {
		return 0
	}
	lambda := speedOfLight / freq
	return max(0, -10*math.Log10(lambda*lambda/(16*math.Pi*math.Pi*d*d)))
}

// cutoffRange returns the distance beyond which a signal is weaker than the
// cutoff (noise floor minus CutoffDb) and is ignored entirely, found by
// bisection on the loss model (fading aside).
func (b *Backend) cutoffRange() float64 {
	thr := 10*math.Log10(b.noise) + 30 - b.p.CutoffDb
	if b.p.Loss == RangeLoss {
		return b.p.MaxRange
	}
	lo, hi := 0.0, 1.0
	for b.rxPower(geom.Vec3{}, geom.V(hi, 0, 0)) >= thr && hi < 1e7 {
		hi *= 2
	}
	for i := 0; i < 60; i++ {
		mid := (lo + hi) / 2
		if b.rxPower(geom.Vec3{}, geom.V(mid, 0, 0)) >= thr {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
