"""The examples in examples/python run and print the right results (each also
exits non-zero by itself when its results are wrong)."""

import os
import subprocess
import sys

import pytest


def run_example(examples_dir, name, *args):
    path = examples_dir / name
    if not path.is_file():
        pytest.skip(f"{path} not found (tests run outside the repository)")
    # Only errors are logged, so any "[validation]" line on stderr is one.
    environment = dict(os.environ, KOMPUTE_LOG_LEVEL="error")
    result = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                            env=environment, timeout=300)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    # The examples run with the validation layer on (inherited environment);
    # its errors would be logged on stderr.
    assert "[validation]" not in result.stderr, result.stderr
    return result.stdout


def test_array_multiplication(examples_dir):
    output = run_example(examples_dir, "array_multiplication.py")
    assert "Output A: [4, 8, 12]" in output
    assert "Output B: [10, 10, 10]" in output


def test_logistic_regression(examples_dir):
    output = run_example(examples_dir, "logistic_regression.py")
    assert "Accuracy: 1.000" in output
    assert "Training matches numpy" in output


def test_matmul(examples_dir):
    output = run_example(examples_dir, "matmul.py")
    assert "Result matches numpy" in output


def test_matmul_odd_sizes(examples_dir):
    output = run_example(examples_dir, "matmul.py", "17", "33", "5")
    assert "Result matches numpy" in output


def test_image_filter(examples_dir, tmp_path):
    output = run_example(examples_dir, "image_filter.py", str(tmp_path))
    assert "Result matches numpy" in output
    assert "Device:" in output
    for name in ("image_filter_input.ppm", "image_filter_output.ppm"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(b"P6\n64 64\n255\n")
        assert len(data) == len(b"P6\n64 64\n255\n") + 64 * 64 * 3


def test_particles(examples_dir):
    output = run_example(examples_dir, "particles.py")
    assert "100 steps of 1000 particles" in output
    assert "Result matches numpy" in output
