#!/usr/bin/env python3
"""Runs every C++ test binary and every pytest file of a GPU bundle in one go,
several at a time, each with a time limit for the whole binary or file and one
for each test, and writes what it sees into an output folder as it comes, so
that a run cut off by its caller still says what it found.

    run_suites.py BUNDLE OUT [--jobs N] [--binary-timeout S] [--test-timeout S]
                  [--only NAME,NAME] [--tag TAG]

BUNDLE is a folder made by scripts/gpu/bundle.sh (test_* binaries,
python-tests/, site/ with the kp module). The environment is the caller's
(run-on-device.sh sets the validation layer and KOMPUTE_ENV_DISABLE).

Per test: gtest binaries read KOMPUTE_TEST_TIMEOUT (test/support's watchdog
prints the test's name, runs KOMPUTE_TEST_HANG_COMMAND, here a debugger
printing every thread's stack when one is installed, and exits with 124);
a pytest process is watched here (python/tests/conftest.py prints each
test's name as it starts): past the limit a debugger prints its C++ stacks
and SIGABRT makes pytest's faulthandler print the Python ones.

Written into OUT (TAG defaults to "suites"):
  TAG-summary.txt  the table (binary or suite, passed, failed, skipped, hung,
                   seconds, exit status), rewritten after each one ends
  TAG-failed.log   the whole output of each binary or suite that did not pass,
                   appended as each one ends
  TAG-logs.tar.gz  every log, at the end
The exit status is 0 when everything passed.
"""

import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import xml.etree.ElementTree as ElementTree

GTEST_OK = re.compile(r"^\[       OK \] ", re.M)
GTEST_FAILED = re.compile(r"^\[  FAILED  \] [^ ]+ \(", re.M)
GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] [^ ]+ \(", re.M)
GTEST_HUNG = re.compile(r"^\[   HUNG   \] (\S+) ran past", re.M)
GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)", re.M)
PYTEST_START = re.compile(r"^\[kp-test-start\] (\S+)", re.M)


class Results:
    """The table, kept in OUT as it grows."""

    def __init__(self, out, tag):
        self.out = out
        self.tag = tag
        self.rows = []
        self.lock = threading.Lock()
        self.started = time.monotonic()

    def add(self, row, log_text):
        with self.lock:
            self.rows.append(row)
            if not row["ok"]:
                with open(self.out / f"{self.tag}-failed.log", "a", encoding="utf-8") as failed:
                    failed.write(f"=== {row['name']} (exit status {row['status']})\n{log_text}\n")
            self.write()

    def write(self):
        rows = sorted(self.rows, key=lambda r: (r["kind"], r["name"]))
        lines = [f"{'binary or suite':<44} {'passed':>6} {'failed':>6} {'skipped':>7} "
                 f"{'hung':>4} {'seconds':>7}  status"]
        total = {"passed": 0, "failed": 0, "skipped": 0, "hung": 0}
        for r in rows:
            for key in total:
                total[key] += r[key]
            status = "ok" if r["ok"] else f"FAILED (exit {r['status']})"
            if r["hung_in"]:
                status += f"; hung in {r['hung_in']}"
            lines.append(f"{r['name']:<44} {r['passed']:>6} {r['failed']:>6} {r['skipped']:>7} "
                         f"{r['hung']:>4} {r['seconds']:>7.1f}  {status}")
        bad = sum(1 for r in rows if not r["ok"])
        lines.append(f"{'all (' + str(len(rows)) + ')':<44} {total['passed']:>6} "
                     f"{total['failed']:>6} {total['skipped']:>7} {total['hung']:>4} "
                     f"{time.monotonic() - self.started:>7.1f}  "
                     f"{'ok' if bad == 0 else str(bad) + ' did not pass'}")
        (self.out / f"{self.tag}-summary.txt").write_text("\n".join(lines) + "\n")
        return "\n".join(lines)


def debugger_command(pid):
    """A debugger printing every thread's stack of process pid, or None."""
    debugger = shutil.which("cuda-gdb") or shutil.which("gdb")
    if not debugger:
        return None
    return (f"timeout 90 {debugger} -q -batch -p {pid} -ex 'thread apply all bt' "
            "< /dev/null 2>&1")


def run_with_limit(command, log_path, limit, env, cwd=None, watch=None):
    """Runs command with its output into log_path; kills its process group
    past `limit` seconds. watch(process, log_path), if given, is called every
    second and may end the process itself. Returns (exit status, seconds,
    killed)."""
    start = time.monotonic()
    killed = False
    # Append mode: the watch appends to the log while the process writes.
    open(log_path, "w").close()
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   cwd=cwd, start_new_session=True)
        while True:
            try:
                status = process.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() - start > limit:
                os.killpg(process.pid, 9)
                status = process.wait()
                killed = True
                break
            if watch:
                watch(process, log_path)
    return status, time.monotonic() - start, killed


class PytestWatch:
    """The per-test limit of a pytest process: the conftest prints
    "[kp-test-start] NODEID" as each test starts; one that runs past the
    limit has its threads' C++ stacks printed by a debugger, then gets
    SIGABRT, on which pytest's faulthandler prints every thread's Python
    stack, and the process ends."""

    def __init__(self, limit):
        self.limit = limit
        self.current = None
        self.since = time.monotonic()
        self.hung = None

    def __call__(self, process, log_path):
        started = PYTEST_START.findall(read(log_path))
        if started and started[-1] != self.current:
            self.current, self.since = started[-1], time.monotonic()
        if self.hung or not self.current or time.monotonic() - self.since < self.limit:
            return
        self.hung = self.current
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\n[   HUNG   ] {self.current} ran past the test time limit of "
                      f"{self.limit} s\n")
            log.flush()
            command = debugger_command(process.pid)
            if command:
                subprocess.run(command, shell=True, stdout=log, stderr=subprocess.STDOUT)
        process.send_signal(6)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)


def read(path):
    return pathlib.Path(path).read_text(encoding="utf-8", errors="replace")


# Binaries run as several processes, each a gtest shard of their tests: the
# matrix suite compiles hundreds of pipeline variants in the driver, which
# took past 300 s in one process on an H100 with the validation layer.
SHARDS = {"test_kernels_matmul": 3}


def run_binary(binary, args, results, logs, shard=None):
    name = binary.name
    log_path = logs / f"{name}.log"
    env = dict(os.environ)
    if shard is not None:
        env["GTEST_TOTAL_SHARDS"] = str(SHARDS[binary.name])
        env["GTEST_SHARD_INDEX"] = str(shard)
        name = f"{binary.name} (shard {shard + 1}/{SHARDS[binary.name]})"
        log_path = logs / f"{binary.name}-shard{shard + 1}.log"
    env["KOMPUTE_TEST_TIMEOUT"] = str(args.test_timeout)
    hang_command = debugger_command("%p")
    if hang_command:
        env["KOMPUTE_TEST_HANG_COMMAND"] = hang_command
    command = args.wrapper.split() + [str(binary), "--gtest_brief=0"]
    status, seconds, killed = run_with_limit(command, log_path, args.binary_timeout, env)
    text = read(log_path)
    hung = GTEST_HUNG.findall(text)
    if killed and not hung:
        started = GTEST_RUN.findall(text)
        hung = [started[-1] if started else "(before the first test)"]
    failed = len(GTEST_FAILED.findall(text))
    row = dict(kind="1 C++", name=name, passed=len(GTEST_OK.findall(text)), failed=failed,
               skipped=len(GTEST_SKIPPED.findall(text)), hung=len(hung),
               hung_in=", ".join(hung), seconds=seconds, status=status,
               ok=status == 0 and not hung and failed == 0)
    results.add(row, text)


def run_pytest_file(path, args, results, logs):
    name = f"pytest {path.name}"
    log_path = logs / f"pytest-{path.stem}.log"
    junit = logs / f"pytest-{path.stem}.xml"
    env = dict(os.environ)
    # The conftest's own limit (every Python stack, then exit) only as a
    # backstop: the watch below comes first, with the C++ stacks too.
    env["KP_TEST_TIMEOUT"] = str(args.test_timeout + 60)
    env["PYTHONUNBUFFERED"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               f"--junitxml={junit}", str(path.resolve())]
    watch = PytestWatch(args.test_timeout)
    status, seconds, killed = run_with_limit(command, log_path, args.binary_timeout, env,
                                             cwd=str(path.parent), watch=watch)
    text = read(log_path)
    counts = dict(passed=0, failed=0, skipped=0)
    if junit.exists():
        try:
            suite = ElementTree.parse(junit).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            tests = int(suite.get("tests", 0))
            counts["failed"] = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            counts["skipped"] = int(suite.get("skipped", 0))
            counts["passed"] = tests - counts["failed"] - counts["skipped"]
        except (ElementTree.ParseError, AttributeError, ValueError):
            pass
    # No junit file: the process ended in the middle (the per-test limit,
    # or this runner's): the last test started is where it hung.
    hung = []
    if watch.hung:
        hung = [watch.hung]
    elif killed or "Timeout (" in text or not junit.exists():
        started = PYTEST_START.findall(text)
        hung = [started[-1] if started else "(before the first test)"]
    row = dict(kind="2 pytest", name=name, hung=len(hung), hung_in=", ".join(hung),
               seconds=seconds, status=status,
               ok=status in (0, 5) and not hung and counts["failed"] == 0, **counts)
    results.add(row, text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=pathlib.Path)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--binary-timeout", type=int, default=240,
                        help="seconds one test binary or pytest file may run")
    parser.add_argument("--test-timeout", type=int, default=60, help="seconds one test may run")
    parser.add_argument("--only", default="", help="comma-separated binary or file names")
    parser.add_argument("--tag", default="suites")
    parser.add_argument("--no-python", action="store_true")
    parser.add_argument("--wrapper", default="",
                        help="a command the C++ binaries run under (say, another dynamic loader)")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    logs = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"kompute-{args.tag}-logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    only = {n for n in args.only.split(",") if n}

    binaries = sorted(p for p in args.bundle.glob("test_*") if p.is_file() and os.access(p, os.X_OK))
    suites = [] if args.no_python else sorted((args.bundle / "python-tests").glob("test_*.py"))
    if only:
        binaries = [b for b in binaries if b.name in only]
        suites = [s for s in suites if s.name in only or s.stem in only]
    # The slowest binaries first, before the pytest files, so that the run
    # ends soon after its longest part (started after the pytest files, they
    # were what a call's time limit cut off).
    slow_first = ["test_kernels_matmul", "test_tensor", "test_lifetime", "test_image", "test_kernels_quant",
                  "test_kernels_attention", "test_kernels_rows", "test_llm_model"]
    binaries.sort(key=lambda b: (b.name not in slow_first, slow_first.index(b.name) if b.name in slow_first else 0,
                                 b.name))
    slow = [b for b in binaries if b.name in slow_first]
    binaries = [b for b in binaries if b.name not in slow_first]

    results = Results(args.out, args.tag)
    (args.out / f"{args.tag}-failed.log").write_text("")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        def shards(b):
            return range(SHARDS[b.name]) if b.name in SHARDS else [None]

        work = [pool.submit(run_binary, b, args, results, logs, shard) for b in slow for shard in shards(b)]
        work += [pool.submit(run_pytest_file, s, args, results, logs) for s in suites]
        work += [pool.submit(run_binary, b, args, results, logs, shard) for b in binaries for shard in shards(b)]
        for future in concurrent.futures.as_completed(work):
            future.result()
    table = results.write()
    with tarfile.open(args.out / f"{args.tag}-logs.tar.gz", "w:gz") as archive:
        archive.add(logs, arcname=f"{args.tag}-logs")
    print(table)
    return 0 if all(r["ok"] for r in results.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
