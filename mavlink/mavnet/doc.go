// Package mavnet is the socket edge of package mavlink: the UDP links of
// real-time runs (--mavlink-udp: UDPAttacher), the link over host_veth in
// runs with network namespaces, the relay's connection to real firmware's
// ground-station link (PX4's UDP port, ArduPilot's TCP server) and the UDP
// gateway to an outside ground station. Package mavlink holds the
// endpoints and behaviours and opens nothing; the behaviour types here
// (VehicleSpec, GatewaySpec) wrap its behaviours and open their sockets as
// edge components.
package mavnet
