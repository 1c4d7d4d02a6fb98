package sweep

import "testing"

// TestFigureCaptions: the sweep report captions its figures in words, not
// with their file names.
func TestFigureCaptions(t *testing.T) {
	for stem, want := range map[string]string{
		"trajectories-jitter=200ms":         "Trajectories, jitter 200 ms",
		"aoi":                               "Age of information of state updates",
		"received_vs_distance-true":         "Packets received against distance, on",
		"delay_cdf-512":                     "Delay CDF, 512",
		"trajectories-mode=DsssRate5_5Mbps": "Trajectories, mode 5.5 Mbit/s",
		"something_new-x=1":                 "Something new, x 1",
	} {
		if got := figureCaption(stem); got != want {
			t.Errorf("caption of %s: %q, want %q", stem, got, want)
		}
	}
}
