"""Records how rclpy serializes the messages skyloop's ROS 2 bridge speaks.

Run with a ROS 2 install sourced (docs/ros2-build.md):

    /usr/bin/python3 ros2/testdata/record_cdr.py > ros2/testdata/rclpy-cdr.txt

Each line is "<type> <hex bytes>" for the message values below;
TestBytesMatchRclpy writes the same values through skyloop's DDS writer and
compares what arrives with these bytes.
"""
import math

from rclpy.serialization import serialize_message
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import BatteryState, NavSatFix
from std_msgs.msg import Bool, Empty, Float64


def stamp():
    return Time(sec=12, nanosec=345000000)


def main():
    pose = PoseStamped()
    pose.header.stamp, pose.header.frame_id = stamp(), "map"
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = 1.5, -2.0, 3.25
    pose.pose.orientation.x, pose.pose.orientation.y = 0.0, 0.0
    pose.pose.orientation.z, pose.pose.orientation.w = 0.6, 0.8

    odom = Odometry()
    odom.header.stamp, odom.header.frame_id = stamp(), "map"
    odom.child_frame_id = "uav_0/base_link"
    odom.pose.pose = pose.pose
    odom.twist.twist.linear.x, odom.twist.twist.linear.y, odom.twist.twist.linear.z = 1.0, 2.0, -0.5
    odom.twist.twist.angular.x, odom.twist.twist.angular.y, odom.twist.twist.angular.z = 0.01, -0.02, 0.3

    fix = NavSatFix()
    fix.header.stamp, fix.header.frame_id = stamp(), "map"
    fix.status.status, fix.status.service = 0, 1
    fix.latitude, fix.longitude, fix.altitude = 47.397742, 8.545594, 493.25
    fix.position_covariance_type = 0

    bat = BatteryState()
    bat.header.stamp, bat.header.frame_id = stamp(), "map"
    bat.voltage, bat.current, bat.percentage = 15.5, -12.25, 0.75
    bat.temperature = bat.charge = bat.capacity = bat.design_capacity = math.nan
    bat.power_supply_status, bat.present = 2, True
    bat.location, bat.serial_number = "", ""

    clock = Clock(clock=stamp())
    twist = Twist()
    twist.linear.x, twist.linear.y, twist.linear.z, twist.angular.z = 1.0, 0.5, 0.25, 0.1

    for name, msg in [("PoseStamped", pose), ("Odometry", odom), ("NavSatFix", fix),
                      ("BatteryState", bat), ("Clock", clock), ("Twist", twist),
                      ("Float64", Float64(data=5.0)), ("Bool", Bool(data=True)), ("Empty", Empty())]:
        print(name, serialize_message(msg).hex())


if __name__ == "__main__":
    main()
