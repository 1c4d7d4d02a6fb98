// Package mujoco steps vehicles in MuJoCo (mujoco.org), as the core sees
// it: the robots' models (MJCF text, built here), the World that steps
// them, and the Library interface through which it reaches MuJoCo itself.
// The library and the robots' model files are outside the process: package
// skyloop/vehicle/mujoco/mjlib, an edge, loads MuJoCo's shared library at
// run time with purego (so skyloop builds without cgo and without MuJoCo,
// and only scenarios that ask for MuJoCo physics need it) and reads the
// files; programs hand it to the engine through their registry.
//
// A World holds every MuJoCo robot of a run: each robot is stepped in a
// model of its own (floor, obstacles, itself) so that robots that do not
// touch are independent, and robots that come near each other share one
// model, so they touch. It is stepped by one goroutine at a time; MuJoCo
// is deterministic single-threaded, so the same inputs give the same
// states.
package mujoco
