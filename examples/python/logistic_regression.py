"""Logistic regression trained by gradient descent on the GPU, with Kompute's
built-in shader kp.SHADERLOGISTICREGRESSION_COMP_SPV.

Each step, the shader computes every sample's share of the gradient and of
the cross-entropy loss (one invocation per sample); the host sums the shares
and updates the two weights and the bias. The same training is done with
numpy, and the example exits non-zero unless the GPU's weights match numpy's
and the model classifies the data set correctly.

    python examples/python/logistic_regression.py
"""

import sys

import numpy as np

import kp

ITERATIONS = 100
LEARNING_RATE = 2.0


def make_dataset(count=64, seed=7):
    """Two features; the label is 1 when x_i + x_j > 1 (linearly separable,
    with a margin)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, size=(count * 2, 2)).astype(np.float32)
    margin = np.abs(x.sum(axis=1) - 1.0) > 0.15
    x = x[margin][:count]
    y = (x.sum(axis=1) > 1.0).astype(np.float32)
    return x[:, 0].copy(), x[:, 1].copy(), y


def train_numpy(x_i, x_j, y):
    w = np.zeros(2, dtype=np.float64)
    b = 0.0
    m = len(y)
    for _ in range(ITERATIONS):
        z = w[0] * x_i + w[1] * x_j + b
        error = 1.0 / (1.0 + np.exp(-z)) - y
        w -= LEARNING_RATE * np.array([np.sum(error * x_i), np.sum(error * x_j)]) / m
        b -= LEARNING_RATE * np.sum(error) / m
    return w, b


def main():
    x_i, x_j, y = make_dataset()
    m = len(y)

    mgr = kp.Manager()
    print("Device:", mgr.get_device_properties()["device_name"])

    t_x_i = mgr.tensor(x_i)
    t_x_j = mgr.tensor(x_j)
    t_y = mgr.tensor(y)
    t_w = mgr.tensor([0.0, 0.0])
    t_grad_i = mgr.tensor(np.zeros(m))
    t_grad_j = mgr.tensor(np.zeros(m))
    t_b = mgr.tensor([0.0])
    t_grad_b = mgr.tensor(np.zeros(m))
    t_loss = mgr.tensor(np.zeros(m))

    params = [t_x_i, t_x_j, t_y, t_w, t_grad_i, t_grad_j, t_b, t_grad_b, t_loss]

    # One invocation per sample; the spec constant is the sample count.
    algo = mgr.algorithm(params, kp.SHADERLOGISTICREGRESSION_COMP_SPV, (m, 1, 1), [float(m)])

    # The data goes to the GPU once.
    mgr.sequence().eval(kp.OpSyncDevice([t_x_i, t_x_j, t_y]))

    # One recorded batch, evaluated again each step without re-recording.
    step = (mgr.sequence()
            .record(kp.OpSyncDevice([t_w, t_b]))
            .record(kp.OpAlgoDispatch(algo))
            .record(kp.OpSyncLocal([t_grad_i, t_grad_j, t_grad_b, t_loss])))

    w = t_w.data()  # zero-copy views: writing them updates the tensors
    b = t_b.data()
    for iteration in range(ITERATIONS):
        step.eval()
        w[0] -= LEARNING_RATE * t_grad_i.data().sum()
        w[1] -= LEARNING_RATE * t_grad_j.data().sum()
        b[0] -= LEARNING_RATE * t_grad_b.data().sum()
        if iteration % 25 == 0 or iteration == ITERATIONS - 1:
            print(f"iteration {iteration:3d}: loss {t_loss.data().sum():.4f}")

    weights = w.copy()
    bias = float(b[0])
    predictions = (weights[0] * x_i + weights[1] * x_j + bias) > 0.0
    accuracy = float(np.mean(predictions == (y > 0.5)))

    expected_w, expected_b = train_numpy(x_i, x_j, y)
    print("Weights:", weights.tolist(), "bias:", bias)
    print("numpy:  ", expected_w.tolist(), "bias:", expected_b)
    print(f"Accuracy: {accuracy:.3f} on {m} samples")

    correct = (np.allclose(weights, expected_w, rtol=1e-3, atol=1e-3)
               and abs(bias - expected_b) < 1e-3
               and accuracy == 1.0)
    print("Training matches numpy" if correct else "UNEXPECTED RESULTS")
    mgr.destroy()
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
