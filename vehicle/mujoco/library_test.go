package mujoco_test

import (
	"errors"
	"strings"
	"testing"

	"skyloop/geom"
	. "skyloop/vehicle/mujoco"
)

// TestNoLibrary: without a library (a registry that was given none) the
// robots' parameters say so against the model field, and a world made
// with none fails to build with the same error, naming what to link.
func TestNoLibrary(t *testing.T) {
	p := DefaultRobotParams()
	p.Model, p.Body, p.Left, p.Right = "r.xml", "base", "lm", "rm"
	if bad := p.Validate(); !strings.Contains(bad["model"], "skyloop/vehicle/mujoco/mjlib") {
		t.Errorf("Validate: %v", bad)
	}
	if bad := p.ValidateFiles(t.TempDir()); !strings.Contains(bad["model"], "no MuJoCo") {
		t.Errorf("ValidateFiles: %v", bad)
	}
	w := NewWorld(nil, p.PhysicsPeriod)
	NewRobots(&p, w, "").New(0, geom.Vec3{}, 0)
	if err := w.Build(nil); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("Build: %v", err)
	}
}
