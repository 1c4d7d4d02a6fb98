"""An rclpy node with use_sim_time and a 1 s timer: it prints each timer
callback with the node's (simulated) time, until stopped."""
import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter


class SimTime(Node):
    def __init__(self):
        super().__init__("simtime", parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        self.n = 0
        self.create_timer(1.0, self.on_timer)

    def on_timer(self):
        self.n += 1
        t = self.get_clock().now().nanoseconds * 1e-9
        print(f"timer {self.n} at {t:.3f}", flush=True)


def main():
    rclpy.init()
    try:
        rclpy.spin(SimTime())
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
