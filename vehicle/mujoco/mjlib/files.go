package mjlib

import (
	"fmt"
	"os"
	"path/filepath"

	"skyloop/internal/untrusted"
	"skyloop/vehicle/mujoco"
)

// maxAssets caps the total size of a robot's model file and the asset
// files it names (meshes, textures, height fields), which MuJoCo reads.
const maxAssets = 4 * untrusted.MaxModel

// ReadRobot reads a robot's MJCF file (mujoco.ParseRobot). The file, and
// every asset file it names (which MuJoCo reads when the world is
// compiled), must be a regular file of at most untrusted.MaxModel bytes,
// and together at most maxAssets: a device, a pipe or a huge file is
// refused with its name.
func ReadRobot(path string) (*mujoco.RobotModel, error) {
	b, err := untrusted.ReadFile(path, untrusted.MaxModel)
	if err != nil {
		return nil, fmt.Errorf("MuJoCo robot model: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	r, err := mujoco.ParseRobot(path, dir, b)
	if err != nil {
		return nil, err
	}
	if err := checkAssets(r, int64(len(b))); err != nil {
		return nil, err
	}
	return r, nil
}

// checkAssets checks every file the robot's assets name, found as MuJoCo
// finds them (mujoco.RobotModel.Assets): each must be a regular file of at
// most untrusted.MaxModel bytes, and all of them with the model file (size
// bytes) at most maxAssets. They are only looked at, not opened (opening a
// named pipe would block).
func checkAssets(r *mujoco.RobotModel, size int64) error {
	total := size
	for _, a := range r.Assets() {
		n, err := checkAsset(a.Path)
		if err != nil {
			return fmt.Errorf("%s: <%s %s=%q>: %w", r.Path, a.Elem, a.Attr, a.Value, err)
		}
		if total += n; total > maxAssets {
			return fmt.Errorf("%s: the model and its asset files take more than the %d MiB allowed (at <%s %s=%q>)",
				r.Path, maxAssets>>20, a.Elem, a.Attr, a.Value)
		}
	}
	return nil
}

// checkAsset returns the size of path, a regular file (symlinks followed)
// of at most untrusted.MaxModel bytes.
func checkAsset(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: %w", path, untrusted.ErrNotRegular)
	}
	if st.Size() > untrusted.MaxModel {
		return 0, fmt.Errorf("%s: %w: %d MiB, more than the %d MiB allowed", path, untrusted.ErrTooLarge, st.Size()>>20, untrusted.MaxModel>>20)
	}
	return st.Size(), nil
}
