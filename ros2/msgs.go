package ros2

import (
	"unsafe"

	"skyloop/dds"
)

// The messages as Cyclone DDS lays out their C structures (idlc's
// msgs.h): Go lays these structs out alike on LP64 (each field at its own
// alignment, strings as char pointers, sequences as dds_sequence_t).
// TestLayouts checks every size and alignment against idlc's descriptor.

// cstr is a C string (char *): NUL-terminated bytes.
type cstr = *byte

// cseq is dds_sequence_t: the buffer of length elements.
type cseq struct {
	maximum, length uint32
	buffer          unsafe.Pointer
	release         bool
}

type cTime struct {
	sec     int32
	nanosec uint32
}

type cHeader struct {
	stamp   cTime
	frameID cstr
}

type cPoint struct{ x, y, z float64 }

type cQuaternion struct{ x, y, z, w float64 }

type cPose struct {
	position    cPoint
	orientation cQuaternion
}

type cPoseStamped struct {
	header cHeader
	pose   cPose
}

type cTwist struct{ linear, angular cPoint }

type cPoseWithCovariance struct {
	pose       cPose
	covariance [36]float64
}

type cTwistWithCovariance struct {
	twist      cTwist
	covariance [36]float64
}

type cOdometry struct {
	header       cHeader
	childFrameID cstr
	pose         cPoseWithCovariance
	twist        cTwistWithCovariance
}

type cNavSatStatus struct {
	status  int8
	service uint16
}

type cNavSatFix struct {
	header                 cHeader
	status                 cNavSatStatus
	latitude               float64
	longitude              float64
	altitude               float64
	positionCovariance     [9]float64
	positionCovarianceType uint8
}

type cBatteryState struct {
	header                cHeader
	voltage               float32
	temperature           float32
	current               float32
	charge                float32
	capacity              float32
	designCapacity        float32
	percentage            float32
	powerSupplyStatus     uint8
	powerSupplyHealth     uint8
	powerSupplyTechnology uint8
	present               bool
	cellVoltage           cseq
	cellTemperature       cseq
	location              cstr
	serialNumber          cstr
}

type cClock struct{ clock cTime }

// cEmpty is std_msgs/Empty: rosidl gives it one byte that nothing reads.
type cEmpty struct{ _ uint8 }

type cBool struct{ data bool }

type cFloat64 struct{ data float64 }

type cString struct{ data cstr }

// layouts pairs each message's Go structure with its descriptor, for
// TestLayouts.
var layouts = []struct {
	desc        *dds.Descriptor
	size, align uintptr
}{
	{descTime, unsafe.Sizeof(cTime{}), unsafe.Alignof(cTime{})},
	{descHeader, unsafe.Sizeof(cHeader{}), unsafe.Alignof(cHeader{})},
	{descPoint, unsafe.Sizeof(cPoint{}), unsafe.Alignof(cPoint{})},
	{descVector3, unsafe.Sizeof(cPoint{}), unsafe.Alignof(cPoint{})},
	{descQuaternion, unsafe.Sizeof(cQuaternion{}), unsafe.Alignof(cQuaternion{})},
	{descPose, unsafe.Sizeof(cPose{}), unsafe.Alignof(cPose{})},
	{descPoseStamped, unsafe.Sizeof(cPoseStamped{}), unsafe.Alignof(cPoseStamped{})},
	{descTwist, unsafe.Sizeof(cTwist{}), unsafe.Alignof(cTwist{})},
	{descPoseWithCovariance, unsafe.Sizeof(cPoseWithCovariance{}), unsafe.Alignof(cPoseWithCovariance{})},
	{descTwistWithCovariance, unsafe.Sizeof(cTwistWithCovariance{}), unsafe.Alignof(cTwistWithCovariance{})},
	{descOdometry, unsafe.Sizeof(cOdometry{}), unsafe.Alignof(cOdometry{})},
	{descNavSatStatus, unsafe.Sizeof(cNavSatStatus{}), unsafe.Alignof(cNavSatStatus{})},
	{descNavSatFix, unsafe.Sizeof(cNavSatFix{}), unsafe.Alignof(cNavSatFix{})},
	{descBatteryState, unsafe.Sizeof(cBatteryState{}), unsafe.Alignof(cBatteryState{})},
	{descClock, unsafe.Sizeof(cClock{}), unsafe.Alignof(cClock{})},
	{descEmpty, unsafe.Sizeof(cEmpty{}), unsafe.Alignof(cEmpty{})},
	{descBool, unsafe.Sizeof(cBool{}), unsafe.Alignof(cBool{})},
	{descFloat64, unsafe.Sizeof(cFloat64{}), unsafe.Alignof(cFloat64{})},
	{descString, unsafe.Sizeof(cString{}), unsafe.Alignof(cString{})},
}
