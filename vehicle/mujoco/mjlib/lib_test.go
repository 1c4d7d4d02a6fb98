package mjlib

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingLibrary: without the library the error says MuJoCo is not
// installed and how to install it.
func TestMissingLibrary(t *testing.T) {
	_, err := load([]string{"libmujoco-skyloop-missing.so.0"})
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install -y libmujoco2.2.2") {
		t.Fatalf("got %v", err)
	}
}
