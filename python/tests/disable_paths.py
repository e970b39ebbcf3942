"""KOMPUTE_ENV_DISABLE for tests that turn fast paths off, keeping what the
run itself turned off (as test/support's DisablePaths does in C++)."""

import os


def disable_paths(monkeypatch, groups):
    """Sets KOMPUTE_ENV_DISABLE to the environment's groups followed by
    `groups` (comma-separated; "" for the environment's alone), so that a
    test disabling paths keeps what the run disabled (the GPU scripts turn
    bfloat16 off under a validation layer that does not know it). Returns
    the list of groups now disabled."""
    inherited = [g for g in os.environ.get("KOMPUTE_ENV_DISABLE", "").split(",") if g]
    wanted = inherited + [g for g in groups.split(",") if g and g not in inherited]
    if wanted:
        monkeypatch.setenv("KOMPUTE_ENV_DISABLE", ",".join(wanted))
    else:
        monkeypatch.delenv("KOMPUTE_ENV_DISABLE", raising=False)
    return wanted
