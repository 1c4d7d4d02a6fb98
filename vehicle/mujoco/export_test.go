package mujoco

// SetGroups puts the world's robots in the given groups now, as if they
// had come near each other (TestMoveKeepsMotion).
func SetGroups(w *World, sets ...[]int) error {
	for i := range w.root {
		w.root[i] = i
	}
	for _, s := range sets {
		for _, i := range s[1:] {
			w.union(s[0], i)
		}
	}
	return w.rebuild()
}
