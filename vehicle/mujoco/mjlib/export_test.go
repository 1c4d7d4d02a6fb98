package mjlib

import "skyloop/vehicle/mujoco"

// Layout returns the offsets and constants this package assumes, named as
// TestLayout prints them from the C headers.
func Layout() map[string]int {
	return map[string]int{
		"model.nq": offModelNQ, "model.nv": offModelNV, "model.nu": offModelNU, "model.nbody": offModelNBody,
		"model.njnt": offModelNJnt, "model.njmax": offModelNJMax, "model.nconmax": offModelNConMax, "data.warning": offDataWarning,
		"warn.contactfull": mujoco.WarnContactFull, "warn.cnstrfull": mujoco.WarnConstraintFull, "model.ngeom": offModelNGeom, "model.na": offModelNA, "model.nsensordata": offModelNSensorData, "model.opt.timestep": offModelTimestep,
		"model.jnt_qposadr": offModelJntQposAdr, "model.jnt_dofadr": offModelJntDofAdr, "model.sensor_adr": offModelSensorAdr, "model.sensor_dim": offModelSensorDim,
		"model.geom_bodyid": offModelGeomBodyID, "model.geom_rbound": offModelGeomRbound, "model.geom_margin": offModelGeomMargin,
		"data.time": offDataTime, "data.qpos": offDataQpos, "data.qvel": offDataQvel, "data.ctrl": offDataCtrl, "data.act": offDataAct, "data.qacc_warmstart": offDataQaccWarm, "data.geom_xpos": offDataGeomXpos,
		"data.sensordata": offDataSensorData, "data.xpos": offDataXpos, "data.xquat": offDataXquat,
		"data.actuator_velocity": offDataActuatorVelocity, "data.actuator_force": offDataActuatorForce,
		"obj.body": mujoco.ObjBody, "obj.joint": mujoco.ObjJoint, "obj.geom": mujoco.ObjGeom, "obj.actuator": mujoco.ObjActuator, "obj.sensor": mujoco.ObjSensor,
		"version": Version, "mjtNum": 8,
	}
}

// VersionNumber returns mj_version() of the loaded library (222 for
// 2.2.2), or 0 when it is not loaded.
func VersionNumber() int {
	if theLib == nil {
		return 0
	}
	return int(theLib.version())
}
