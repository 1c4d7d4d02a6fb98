package wifi

import "fmt"

// PathLoss is a propagation loss model.
type PathLoss uint8

// The propagation loss models (ns-3's of the same names).
const (
	LogDistance PathLoss = iota // log-distance: Exponent, RefDistance, RefLoss
	Friis                       // free space at Frequency
	TwoRay                      // two-ray ground reflection at Frequency and AntennaZ
	RangeLoss                   // perfect reception within MaxRange, nothing beyond
)

var pathLossNames = [...]string{"logdistance", "friis", "tworay", "range"}

// String returns the model's name as scenarios write it.
func (l PathLoss) String() string {
	if int(l) < len(pathLossNames) {
		return pathLossNames[l]
	}
	return fmt.Sprintf("loss%d", l)
}

// MarshalText writes the name.
func (l PathLoss) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a name: logdistance, friis, tworay or range.
func (l *PathLoss) UnmarshalText(b []byte) error {
	for i, n := range pathLossNames {
		if string(b) == n {
			*l = PathLoss(i)
			return nil
		}
	}
	return fmt.Errorf("must be logdistance, friis, tworay or range, got %q", b)
}

// Fading is a small-scale fading model on top of the path loss.
type Fading uint8

// The fading models.
const (
	NoFading Fading = iota // the mean path loss only
	Rayleigh               // Rayleigh fading (Nakagami with m = 1)
	Nakagami               // Nakagami-m fading with NakagamiM
)

var fadingNames = [...]string{"none", "rayleigh", "nakagami"}

// String returns the model's name as scenarios write it.
func (f Fading) String() string {
	if int(f) < len(fadingNames) {
		return fadingNames[f]
	}
	return fmt.Sprintf("fading%d", f)
}

// MarshalText writes the name.
func (f Fading) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a name: none, rayleigh or nakagami.
func (f *Fading) UnmarshalText(b []byte) error {
	for i, n := range fadingNames {
		if string(b) == n {
			*f = Fading(i)
			return nil
		}
	}
	return fmt.Errorf("must be none, rayleigh or nakagami, got %q", b)
}
