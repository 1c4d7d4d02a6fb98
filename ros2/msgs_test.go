package ros2

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestLayouts: every Go mirror of a message has the size and alignment of
// idlc's C structure (a field in the wrong place or of the wrong width
// changes one or the other, or both).
func TestLayouts(t *testing.T) {
	for _, l := range layouts {
		if uintptr(l.desc.Size) != l.size || uintptr(l.desc.Align) != l.align {
			t.Errorf("%s: Go size %d align %d, idlc's %d and %d", l.desc.TypeName, l.size, l.align, l.desc.Size, l.desc.Align)
		}
	}
	if len(layouts) != 19 {
		t.Errorf("%d layouts checked, want every one of msgs.idl's 19 structs", len(layouts))
	}
}

// TestDescriptorsAreCurrent regenerates descriptors.go from msgs.idl with
// idlc and a C compiler (CI installs cyclonedds-tools and cyclonedds-dev)
// and compares.
func TestDescriptorsAreCurrent(t *testing.T) {
	for _, p := range []string{"idlc", "cc"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("SKYLOOP_REQUIRE_DDS") != "" {
				t.Fatalf("%s not found (SKYLOOP_REQUIRE_DDS): apt-get install cyclonedds-tools cyclonedds-dev gcc", p)
			}
			t.Skipf("%s not found: the descriptor check needs Cyclone's idlc and a C compiler", p)
		}
	}
	out, err := exec.Command("go", "run", "./descgen", "-idl", "msgs.idl", "-out", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("descgen: %v\n%s", err, out)
	}
	have, _ := os.ReadFile("descriptors.go")
	if !bytes.Equal(out, have) {
		t.Errorf("descriptors.go is not what descgen makes of msgs.idl: run go generate ./ros2")
	}
}
