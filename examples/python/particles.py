"""Particles moved on the GPU, step after step, compared against numpy: a
tensor of structs (a numpy structured dtype, read by the shader as an array
of structs), a tensor made with mgr.zeros(), and an operation written in
Python (a kp.OpComposite that records the step's dispatch and read-back and
counts the steps in its post_eval hook). Exits non-zero if the result
differs from numpy's.

    python examples/python/particles.py [COUNT STEPS]
"""

import sys

import numpy as np

import kp

# std430: vec2 at 0, vec2 at 8, float at 16, uint at 20; 24 bytes. numpy's
# align=True gives the same layout.
PARTICLE = np.dtype([("position", np.float32, (2,)), ("velocity", np.float32, (2,)),
                     ("mass", np.float32), ("bounces", np.uint32)], align=True)

SHADER = """
#version 450
layout(local_size_x = 64) in;
struct Particle { vec2 position; vec2 velocity; float mass; uint bounces; };
layout(set = 0, binding = 0) buffer Particles { Particle particles[]; };
layout(set = 0, binding = 1) buffer Energy { float energy[]; };
layout(push_constant) uniform Step { float dt; float gravity; uint count; } step;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= step.count) {
        return;
    }
    Particle p = particles[i];
    p.velocity.y -= step.gravity * step.dt;
    p.position += p.velocity * step.dt;
    if (p.position.y < 0.0) {            // bounce off the floor, losing a little
        p.position.y = -p.position.y;
        p.velocity.y = -0.9 * p.velocity.y;
        p.bounces += 1u;
    }
    particles[i] = p;
    energy[i] += 0.5 * p.mass * dot(p.velocity, p.velocity);
}
"""

DT, GRAVITY = 0.01, 9.81


class Step(kp.OpComposite):
    """One simulation step: the dispatch, then the read-back of both tensors."""

    def __init__(self, mgr, particles, energy):
        count = particles.size()
        push = np.array([(DT, GRAVITY, count)],
                        dtype=[("dt", np.float32), ("gravity", np.float32), ("count", np.uint32)])
        algorithm = mgr.algorithm([particles, energy], kp.compile_source(SHADER),
                                  ((count + 63) // 64, 1, 1), [], push)
        super().__init__([kp.OpAlgoDispatch(algorithm), kp.OpSyncLocal([particles, energy])])
        self.steps = 0

    def post_eval(self, command_buffer):
        super().post_eval(command_buffer)
        self.steps += 1


def numpy_steps(particles, steps):
    p = particles.copy()
    energy = np.zeros(len(p), dtype=np.float32)
    dt, gravity = np.float32(DT), np.float32(GRAVITY)
    for _ in range(steps):
        p["velocity"][:, 1] -= gravity * dt
        p["position"] += p["velocity"] * dt
        below = p["position"][:, 1] < 0
        p["position"][below, 1] *= -1
        p["velocity"][below, 1] *= np.float32(-0.9)
        p["bounces"][below] += 1
        energy += np.float32(0.5) * p["mass"] * (p["velocity"] ** 2).sum(axis=1)
    return p, energy


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = np.random.default_rng(7)
    start = np.zeros(count, dtype=PARTICLE)
    start["position"] = rng.uniform(0, 10, (count, 2))
    start["velocity"] = rng.uniform(-5, 5, (count, 2))
    start["mass"] = rng.uniform(0.5, 2, count)

    mgr = kp.Manager()
    print("Device:", mgr.get_device_properties()["device_name"])
    particles = mgr.tensor_t(start)          # DataTypes.custom, 24-byte elements
    energy = mgr.zeros(count)                # zero on the device too: no upload needed
    mgr.sequence().eval(kp.OpSyncDevice([particles]))
    step = Step(mgr, particles, energy)
    sequence = mgr.sequence().record(step)
    for _ in range(steps):
        sequence.eval()

    expected, expected_energy = numpy_steps(start, steps)
    result = particles.data()                # the structured view of the tensor
    print(f"{step.steps} steps of {count} particles; "
          f"{int(result['bounces'].sum())} bounces")
    # A particle that grazes the floor may bounce on one side and not on the
    # other (the GPU may fuse multiply and add): those are allowed to differ,
    # at most 1 in 100; all others must agree.
    agree = result["bounces"] == expected["bounces"]
    same = (np.count_nonzero(~agree) <= count // 100
            and np.allclose(result["position"][agree], expected["position"][agree],
                            rtol=1e-3, atol=1e-3)
            and np.allclose(energy.data()[agree], expected_energy[agree], rtol=1e-3))
    print("Result matches numpy" if same and step.steps == steps else "Result DIFFERS from numpy")
    return 0 if same and step.steps == steps else 1


if __name__ == "__main__":
    sys.exit(main())
