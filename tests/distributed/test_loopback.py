"""A distributed collection talks to nothing but this machine: every connect() and
bind() made by the driver, the Ray head and the workers is to loopback or a Unix
socket (so nothing listens on another interface either), and no cloud-metadata
address (169.254.169.254) is ever tried."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BENCHMARK = ["-m", "training.league.distributed_runner", "benchmark", "--workers", "2",
             "--episodes", "4", "--n-blue", "2", "--n-red", "2", "--seed", "0",
             "--max-steps", "60"]
"""The documented benchmark command with fewer workers and episodes: it starts its own
Ray cluster and collects on it."""

FAMILY = re.compile(r"sa_family=(AF_[A-Z0-9]+)")
INET = re.compile(r'inet_addr\("([^"]+)"\)')
INET6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')


def outside_loopback(line: str) -> str | None:
    """Why a traced connect() line is not to loopback or a local socket, or None."""
    family = FAMILY.search(line)
    if family is None:
        return None  # "<... connect resumed>": the address was on the call's first line
    name = family.group(1)
    if name in ("AF_UNIX", "AF_NETLINK"):
        return None
    if name == "AF_INET" and (found := INET.search(line)):
        address = ipaddress.ip_address(found.group(1))
    elif name == "AF_INET6" and (found := INET6.search(line)):
        address = ipaddress.ip_address(found.group(1))
        address = address.ipv4_mapped or address
    else:
        return f"family {name}"
    return None if address.is_loopback else f"address {address}"


def test_outside_loopback_reads_strace_lines() -> None:
    ok = ['12 connect(3, {sa_family=AF_INET, sin_port=htons(6379), '
          'sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
          '12 connect(3, {sa_family=AF_INET6, sin6_port=htons(1), sin6_flowinfo=htonl(0), '
          'inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
          '12 connect(3, {sa_family=AF_INET6, sin6_port=htons(1), sin6_flowinfo=htonl(0), '
          'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
          '12 connect(4, {sa_family=AF_UNIX, sun_path="/tmp/ray/s"}, 110) = 0',
          "12 <... connect resumed>) = 0"]
    assert [outside_loopback(line) for line in ok] == [None] * len(ok)
    bad = ['1 connect(3, {sa_family=AF_INET, sin_port=htons(80), '
           'sin_addr=inet_addr("169.254.169.254")}, 16) = -1',
           '1 connect(3, {sa_family=AF_INET6, sin6_port=htons(1), sin6_flowinfo=htonl(0), '
           'inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
           '1 connect(3, {sa_family=AF_PACKET, sll_protocol=htons(ETH_P_ALL)}, 20) = 0']
    assert [outside_loopback(line) for line in bad] == [
        "address 169.254.169.254", "address 2001:db8::1", "family AF_PACKET"]


def test_the_benchmark_command_runs_and_talks_only_to_loopback(tmp_path) -> None:
    """The benchmark command, in a fresh process under strace (when installed): its report,
    then every connect() and bind() its driver, Ray head and workers made."""
    strace = shutil.which("strace")
    home = tmp_path / "home"
    home.mkdir()
    trace = tmp_path / "trace.txt"
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(ROOT))
    command = [sys.executable, *BENCHMARK]
    if strace is not None:
        command = [strace, "-f", "-qq", "-e", "trace=connect,bind", "-e", "signal=none",
                   "-o", str(trace), *command]
        # --seccomp-bpf stops the traced processes at connect() and bind() only (faster).
        if "--seccomp-bpf" in subprocess.run([strace, "-h"], capture_output=True,
                                             text=True).stdout:
            command.insert(1, "--seccomp-bpf")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 episodes of 2v2 (seeds 0..3)" in done.stdout
    assert "Ray, 2 workers" in done.stdout and "speedup" in done.stdout
    assert "the same episodes both ways: yes" in done.stdout
    if strace is None:
        pytest.skip("strace is not installed: the connect() calls cannot be traced")
    text = trace.read_text()
    calls = [line for line in text.splitlines() if "connect(" in line]
    assert any("AF_INET" in line for line in calls), "no TCP connection was traced"
    outside = {reason for line in calls if (reason := outside_loopback(line))}
    assert not outside, f"connections outside loopback: {sorted(outside)}"
    binds = [line for line in text.splitlines() if "bind(" in line]
    assert any("AF_INET" in line for line in binds), "no listening socket was traced"
    outside = {reason for line in binds if (reason := outside_loopback(line))}
    assert not outside, f"sockets bound outside loopback: {sorted(outside)}"
    assert "169.254.169.254" not in text
