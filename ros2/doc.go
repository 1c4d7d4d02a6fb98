// Package ros2 is skyloop's ROS 2 bridge: the ROS 2 messages it speaks
// over DDS (laid out as Cyclone DDS's C structures, with idlc's topic
// descriptors), ROS 2's naming conventions, and the bridge that publishes
// the vehicles' state and the simulation clock and takes ROS 2 commands.
package ros2

//go:generate go run ./descgen -idl msgs.idl -out descriptors.go
