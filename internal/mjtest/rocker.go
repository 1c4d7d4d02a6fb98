package mjtest

// Rocker is the netbots paper's robot as one MJCF file, a robot sensitive
// to rounding: a 2.5 kg box on two cylinder wheels (friction 1.5) driven
// by velocity actuators lm and rm (kv 2, force-limited to 3 N m), and two
// casters 2 mm above the floor, so that it rocks on its axle; rounding
// differences in its contacts grow into centimetres within seconds. Its
// body is base; sensor p is base's position.
const Rocker = `<mujoco model="rocker">
  <compiler angle="degree"/>
  <worldbody>
    <body name="base" pos="0 0 0.06">
      <freejoint/>
      <geom type="box" size="0.15 0.1 0.03" mass="2.5"/>
      <geom type="sphere" size="0.02" pos="0.12 0 -0.038" mass="0.01"/>
      <geom type="sphere" size="0.02" pos="-0.12 0 -0.038" mass="0.01"/>
      <body name="wheel_l" pos="0 0.125 0">
        <joint name="left" type="hinge" axis="0 1 0"/>
        <geom type="cylinder" size="0.06 0.01" euler="90 0 0" mass="0.1" friction="1.5 0.005 0.0001"/>
      </body>
      <body name="wheel_r" pos="0 -0.125 0">
        <joint name="right" type="hinge" axis="0 1 0"/>
        <geom type="cylinder" size="0.06 0.01" euler="90 0 0" mass="0.1" friction="1.5 0.005 0.0001"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <velocity name="lm" joint="left" kv="2" forcelimited="true" forcerange="-3 3"/>
    <velocity name="rm" joint="right" kv="2" forcelimited="true" forcerange="-3 3"/>
  </actuator>
  <sensor><framepos name="p" objtype="body" objname="base"/></sensor>
</mujoco>`
