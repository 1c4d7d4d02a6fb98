package mjlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/internal/untrusted"
)

// TestReadRobotBounds: reading a robot's model (when the world is built,
// after validate) refuses a device or a file over the cap without reading
// it, and so do the asset files the model names, one by one and together;
// the errors name the files and wrap untrusted's.
func TestReadRobotBounds(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		t.Helper()
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	robot := func(name, compiler, assets string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		text := `<mujoco>` + compiler + `<asset>` + assets + `</asset><worldbody><body name="b"><geom type="sphere" size="1"/></body></worldbody></mujoco>`
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("sparse 600 MB model", func(t *testing.T) {
		p := sparse("big.xml", 600<<20)
		_, err := ReadRobot(p)
		if !errors.Is(err, untrusted.ErrTooLarge) || !strings.Contains(err.Error(), p) {
			t.Fatalf("got %v, want ErrTooLarge naming %s", err, p)
		}
	})
	t.Run("device model", func(t *testing.T) {
		_, err := ReadRobot("/dev/zero")
		if !errors.Is(err, untrusted.ErrNotRegular) || !strings.Contains(err.Error(), "/dev/zero") {
			t.Fatalf("got %v, want ErrNotRegular naming /dev/zero", err)
		}
	})
	t.Run("assets", func(t *testing.T) {
		os.Mkdir(filepath.Join(dir, "m"), 0o755)
		os.Mkdir(filepath.Join(dir, "a"), 0o755)
		sparse("m/huge.stl", 600<<20)
		for i := 0; i < 5; i++ {
			sparse(fmt.Sprintf("m/part%d.stl", i), 60<<20)
		}
		sparse("a/ok.stl", 10)
		if err := syscall.Mkfifo(filepath.Join(dir, "m", "pipe.png"), 0o644); err != nil {
			t.Fatal(err)
		}
		parts := ""
		for i := 0; i < 5; i++ {
			parts += fmt.Sprintf(`<mesh name="p%d" file="part%d.stl"/>`, i, i)
		}
		for _, c := range []struct {
			compiler, assets string
			want             error
			text             string
		}{
			{`<compiler meshdir="m"/>`, `<mesh file="huge.stl"/>`, untrusted.ErrTooLarge, `<mesh file="huge.stl">: ` + filepath.Join(dir, "m", "huge.stl")},
			{`<compiler meshdir="m"/>`, `<mesh file="/dev/zero"/>`, untrusted.ErrNotRegular, `<mesh file="/dev/zero">`},
			{`<compiler texturedir="m"/>`, `<texture type="cube" fileup="pipe.png"/>`, untrusted.ErrNotRegular, `<texture fileup="pipe.png">`},
			{`<compiler meshdir="m"/>`, `<hfield name="h" file="m/huge.stl" size="1 1 1 1"/>`, nil, "no such file"},
			{`<compiler meshdir="m" strippath="true"/>`, `<hfield name="h" file="x/y/huge.stl" size="1 1 1 1"/>`, untrusted.ErrTooLarge, `<hfield file="x/y/huge.stl">`},
			{`<compiler meshdir="m"/>`, parts, nil, "the model and its asset files take more than the 256 MiB allowed"},
			{`<compiler assetdir="a"/>`, `<mesh file="ok.stl"/>`, nil, ""},
			{``, `<mesh file="a/ok.stl"/>`, nil, ""},
		} {
			p := robot("r.xml", c.compiler, c.assets)
			_, err := ReadRobot(p)
			if c.text == "" {
				if err != nil {
					t.Errorf("%s %s: %v", c.compiler, c.assets, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), p) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("%s %s: got %v, want %v with %q", c.compiler, c.assets, err, c.want, c.text)
			}
		}
	})
}
