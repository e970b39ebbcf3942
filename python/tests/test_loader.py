"""The Vulkan loader, opened at run time: without it kp.Manager() raises a
clear kp.Error, and once it can be found the next Manager works.

The library opens the loader as it is loaded (import kp), so each case runs
in a fresh interpreter started with the environment it needs.
"""

import os
import subprocess
import sys
import textwrap

MISSING = "/nonexistent/kompute-test/libvulkan.so.1"


def run_python(script, **environment):
    env = dict(os.environ, **environment)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_missing_loader_is_a_kp_error_and_the_next_manager_after_it_is_found_works():
    result = run_python(
        f"""
        import os
        import numpy as np
        import kp

        for attempt in range(2):
            try:
                kp.Manager()
            except kp.Error as error:
                message = str(error)
            else:
                raise SystemExit("kp.Manager() raised nothing")
            assert message.startswith(
                "No Vulkan loader found: KOMPUTE_ENV_VULKAN_LOADER names {MISSING}: "), message
            assert "No such file" in message, message
        print(message)

        # The variable unset: the system's loader is opened on this retry.
        del os.environ["KOMPUTE_ENV_VULKAN_LOADER"]
        mgr = kp.Manager()
        a = mgr.tensor(np.array([1, 2, 3], dtype=np.float32))
        b = mgr.tensor(np.array([4, 5, -6], dtype=np.float32))
        product = mgr.tensor(np.zeros(3, dtype=np.float32))
        (mgr.sequence()
            .record(kp.OpSyncDevice([a, b]))
            .record(kp.OpMult([a, b, product], mgr.algorithm()))
            .record(kp.OpSyncLocal([product]))
            .eval())
        assert product.data().tolist() == [4, 10, -18], product.data()
        print("computed")
        """,
        KOMPUTE_ENV_VULKAN_LOADER=MISSING,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("No Vulkan loader found"), result.stdout
    assert lines[-1] == "computed", result.stdout + result.stderr
