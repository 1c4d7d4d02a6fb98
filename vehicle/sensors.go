package vehicle

import (
	"math"

	"skyloop/geom"
)

// Frames. skyloop's world frame is ENU: x east, y north, z up, in metres
// from the scenario origin. A vehicle's body frame is FLU: x forward, y
// left, z up. Every position, velocity, attitude and body-frame reading in
// this package uses these two frames. PX4 and ArduPilot use NED (x north,
// y east, z down) and FRD (x forward, y right, z down); NED, FRD and
// AttitudeNED are the only conversions between the two conventions, so a
// bridge to a real flight stack converts Sensors with them and nothing else.

// NED converts a world-frame vector from ENU to NED (x north, y east, z
// down).
func NED(enu geom.Vec3) geom.Vec3 { return geom.V(enu.Y, enu.X, -enu.Z) }

// FRD converts a body-frame vector from FLU to FRD (x forward, y right, z
// down): a rotation of half a turn about the forward axis.
func FRD(flu geom.Vec3) geom.Vec3 { return geom.V(flu.X, -flu.Y, -flu.Z) }

// AttitudeNED converts an attitude from skyloop's convention (q rotates
// body FLU vectors into world ENU) to PX4's (the result rotates body FRD
// vectors into world NED): NED(q.Rotate(v)) equals
// AttitudeNED(q).Rotate(FRD(v)) for every v. A vehicle facing east, level,
// has the identity attitude here and a 90 degree heading in NED.
func AttitudeNED(q geom.Quat) geom.Quat {
	// ENU -> NED is half a turn about (1, 1, 0)/sqrt 2; FRD -> FLU is half
	// a turn about x.
	const h = math.Sqrt2 / 2
	return geom.Quat{X: h, Y: h}.Mul(q).Mul(geom.Quat{X: 1})
}

// EarthField is the magnetic field the magnetometers of every vehicle
// read, in gauss, world frame (ENU): the field of the World Magnetic Model
// tables PX4 uses, at PX4 SITL's default home (Zurich, 47.397742 N,
// 8.545594 E: 0.21743 G north, 0.01294 G east, 0.43041 G down; declination
// 3.41 degrees, inclination 63.16 degrees), so that real PX4's heading
// estimate agrees with the truth there.
var EarthField = geom.V(0.01294, 0.21743, -0.43041)

// Sensors is what a vehicle's instruments read at one control step. The
// physics model fills it (Physics.Sense), drawing noise from the vehicle's
// own "sensors" random stream, and the controller reads it
// (Controller.Control); it is the only way a controller learns about the
// vehicle. The same readings are what a bridge to a real flight stack
// sends it (PX4's HIL_SENSOR and HIL_GPS, after NED, FRD and AttitudeNED).
//
// A reading a kind does not model stays zero. The multirotor fills
// everything. The kinematic kinds (pointmass, groundbot) model no
// instruments: they fill only Truth and Contact, and their controllers fly
// on that perfect pose.
type Sensors struct {
	IMU     IMU
	Mag     Mag
	Baro    Baro
	GPS     GPS
	Battery Battery
	// AHRS is the attitude an attitude and heading reference system
	// reports.
	AHRS AHRS
	// Contact is the landing-gear switch: true while the vehicle rests on
	// the ground.
	Contact bool
	// Truth is the vehicle's exact pose and velocity, as a motion-capture
	// system or the simulator's ground-truth message (PX4's
	// HIL_STATE_QUATERNION) gives them. The kinematic kinds' controllers
	// fly on it; the multirotor's PX4-like controller reads it only to let
	// its estimate settle on the truth while it rests disarmed on the
	// ground, as a converged EKF does before arming.
	Truth Pose
}

// IMU is an inertial measurement unit's reading, sampled at every control
// step, in the body frame (FLU).
type IMU struct {
	// Gyro is the body angular rate, rad/s (x roll, y pitch, z yaw rate).
	Gyro geom.Vec3
	// Accel is the specific force (non-gravitational acceleration), m/s^2:
	// about (0, 0, +9.81) for a vehicle at rest, level.
	Accel geom.Vec3
}

// Mag is a three-axis magnetometer's reading: EarthField seen in the body
// frame (FLU), gauss.
type Mag struct {
	Field geom.Vec3
}

// Baro is a barometer's reading.
type Baro struct {
	// New is true at the control step where a new sample was taken (at the
	// barometer's rate); between samples the reading holds the last one.
	New bool
	// Pressure is the static pressure, Pa (ISA troposphere, with sea-level
	// pressure at the world origin's z = 0).
	Pressure float64
	// Alt is the pressure altitude that Pressure corresponds to, m up in
	// the world frame.
	Alt float64
	// Temperature is the ISA air temperature at Alt, degrees Celsius.
	Temperature float64
}

// GPS is a satellite receiver's reading, in the local world frame (ENU,
// metres from the scenario origin; geom.Geodetic.ToGeodetic converts the
// position to latitude, longitude and altitude).
type GPS struct {
	// New is true at the control step where a new fix arrived (at the
	// receiver's rate); between fixes the reading holds the last one.
	New bool
	// Fix is true once the receiver has a 3D fix.
	Fix bool
	Pos geom.Vec3 // m, world frame
	Vel geom.Vec3 // m/s, world frame
}

// Battery is the power module's reading.
type Battery struct {
	Voltage   float64 // terminal voltage, V
	Current   float64 // current drawn, A
	Remaining float64 // fraction of charge left, 0..1
	Energy    float64 // energy drawn since the start, J
}

// AHRS is an attitude and heading reference system's output.
type AHRS struct {
	// Att rotates body-frame (FLU) vectors into the world frame (ENU).
	Att geom.Quat
}

// Pose is an exact kinematic state: where the vehicle is, how it moves and
// where it points. Every kind fills Pos. The multirotor and the point mass
// fill Vel; the ground robot, which can only move along its heading, fills
// Speed instead (its velocity is Speed*(cos Yaw, sin Yaw, 0), which its
// controller never needs, so no control step pays for the cosine and
// sine). The multirotor fills Att and Rates (what PX4's
// HIL_STATE_QUATERNION carries) and leaves Yaw and YawRate zero (Att.Yaw()
// is its heading); the kinematic kinds, whose attitude is their heading,
// fill Yaw and YawRate and leave Att and Rates zero.
type Pose struct {
	Pos     geom.Vec3 // m, world frame
	Vel     geom.Vec3 // m/s, world frame
	Speed   float64   // m/s along the heading (ground robot)
	Att     geom.Quat // rotates body (FLU) vectors into the world frame (ENU)
	Rates   geom.Vec3 // body rates, rad/s
	Yaw     float64   // heading, rad, counter-clockwise from east
	YawRate float64   // turn rate, rad/s
}

// MaxMotors is the largest number of motors an Actuators value commands.
const MaxMotors = 8

// Actuators is what a controller commands at a control step; the physics
// holds it over its steps until the next control step (zero-order hold).
// Each physics model reads the part that is its natural input and ignores
// the rest.
type Actuators struct {
	// Motors are normalised rotor commands of a multirotor, 0 (stopped) to
	// 1 (full speed); the physics maps u to a rotor speed target
	// u * max_rotor_speed, which the motors follow with their lag. The
	// first NumMotors entries are used, in the airframe's rotor order.
	Motors    [MaxMotors]float64
	NumMotors int

	// WheelL and WheelR are a differential-drive robot's wheel speed
	// commands, rad/s (positive forward).
	WheelL, WheelR float64

	// Vel is a point mass's velocity setpoint (m/s, world frame), which it
	// tracks within its acceleration limit.
	Vel geom.Vec3
	// Yaw is a point mass's heading setpoint (rad); when TurnByRate is set
	// it turns at TurnRate (rad/s) instead, both within its yaw-rate
	// limit.
	Yaw        float64
	TurnRate   float64
	TurnByRate bool
}
