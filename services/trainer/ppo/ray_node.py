"""Ray for one run: a cluster to join (checked first), or a local node confined to the run.

The local node listens on loopback only, keeps its files (sessions, logs, RLlib's result
folder) under the run's folder, starts no dashboard, keeps its auth token in this process's
environment (not ``~/.ray``), and is shut down, children included, when the run ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

from koholint.game.rom import ROM_ENV_VARIABLE
from trainer.ppo.config import TrainConfigError

LOOPBACK = "127.0.0.1"
SINGLE_NODE_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY_PROBE_TIMEOUT_S = 5.0
RAY_GCS_PORT = 6379
RAY_CLIENT_PORT = 10001
# Ray's own chatter that a user of `koholint train` cannot act on (token-auth notices,
# the new-API-stack banner, deprecations inside RLlib): errors only.
QUIET_LOGGERS = ("ray", "ray.rllib", "ray.tune", "ray.train", "ray.data", "ray._private")


def world_runtime_env() -> dict[str, dict[str, str]] | None:
    """A cluster's workers play the run's world: its path travels in their environment (the
    worlds folder is mounted at the same path on every node); a local node inherits it."""
    rom = os.environ.get(ROM_ENV_VARIABLE)
    return {"env_vars": {ROM_ENV_VARIABLE: rom}} if rom else None


def host_and_port(address: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    return parsed.hostname or LOOPBACK, parsed.port or default_port


def check_cluster(address: str, timeout_s: float = RAY_PROBE_TIMEOUT_S) -> None:
    """The address answers, and answers as Ray does (gRPC, so HTTP/2), within `timeout_s`:
    Ray itself waits minutes on an address that accepts connections but is not Ray."""
    if address == "auto":
        return
    default = RAY_CLIENT_PORT if address.startswith("ray://") else RAY_GCS_PORT
    host, port = host_and_port(address, default)
    setting = "ray_address / RAY_ADDRESS"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            speaks_http2 = _answers_http2(connection)
    except OSError as error:
        raise TrainConfigError(
            f"{setting}={address!r} is unreachable ({error}); check the address or unset it",
            "ray_address",
        ) from error
    if not speaks_http2:
        raise TrainConfigError(
            f"{setting}={address!r} accepts connections but does not speak Ray's protocol "
            f"(no gRPC answer in {timeout_s:.0f} s); is it a Ray head (GCS port {RAY_GCS_PORT}, "
            f"or ray:// on {RAY_CLIENT_PORT})?",
            "ray_address",
        )


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HTTP2_EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
HTTP2_SETTINGS_TYPE = 0x04


def _answers_http2(connection: socket.socket) -> bool:
    """A gRPC server answers the HTTP/2 preface with a SETTINGS frame; an HTTP/1 server
    answers with text or closes; anything else says nothing (then the timeout ends it)."""
    connection.sendall(HTTP2_PREFACE + HTTP2_EMPTY_SETTINGS)
    header = b""
    try:
        while len(header) < 9:
            chunk = connection.recv(9 - len(header))
            if not chunk:
                return False
            header += chunk
    except TimeoutError:
        return False
    return header[3] == HTTP2_SETTINGS_TYPE


@contextlib.contextmanager
def ray_for_run(address: str, run_dir: Path, cpus: int) -> Iterator[None]:
    """Ray for the duration of the block: joined at `address`, or a local node (see above)."""
    import ray

    quiet_ray()
    single_node(not address)
    if address:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                 runtime_env=world_runtime_env())  # fmt: skip
        try:
            yield
        finally:
            ray.shutdown()
        return
    confine_local_ray(run_dir)
    session_root = _short_temp_dir(run_dir)
    reaper = start_reaper()
    try:
        ray.init(
            address="local",  # never a RAY_ADDRESS from the environment: the operator said local
            num_cpus=cpus,
            num_gpus=0,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            _node_ip_address=LOOPBACK,
            _temp_dir=str(session_root),
        )
        node = ray._private.worker._global_node
        if node is not None:
            tell_reaper(reaper, node.node_id, Path(node.get_session_dir_path()).name)
        yield
    finally:
        ray.shutdown()
        stop_reaper(reaper)
        _remove_link(session_root)


# The reaper: Ray ends its node's processes when the driver ends, or dies, except the two
# agents the raylet starts (dashboard agent, runtime-env agent), which outlive a killed driver.
# A small process, in its own session (so Ctrl-C does not end it first), waits until the
# driver's end closes its stdin, then ends whatever still belongs to the node: processes whose
# command line names the session, carry the node's RAY_NODE_ID, or hold its files open.
REAPER = """
import os, signal, sys, time
driver = os.getppid()
line = sys.stdin.readline().split()
sys.stdin.read()
if len(line) != 2:
    sys.exit(0)
node_id, session = line[0].encode(), line[1].encode()

def belongs(pid):
    if pid in (driver, os.getpid()):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            if session in file.read():
                return True
        with open(f"/proc/{pid}/environ", "rb") as file:
            if b"RAY_NODE_ID=" + node_id in file.read():
                return True
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if session in os.readlink(f"/proc/{pid}/fd/{fd}").encode():
                return True
        return False
    except OSError:
        return False

for sig, pause in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
    left = [int(p) for p in os.listdir("/proc") if p.isdigit() and belongs(int(p))]
    for pid in left:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    if not left:
        break
    time.sleep(pause)
"""


def start_reaper() -> subprocess.Popen[bytes] | None:
    if not Path("/proc/self/environ").exists():  # Linux only; elsewhere Ray's own cleanup
        return None
    return subprocess.Popen(
        [sys.executable, "-c", REAPER], stdin=subprocess.PIPE, start_new_session=True
    )


def tell_reaper(reaper: subprocess.Popen[bytes] | None, node_id: str, session: str) -> None:
    if reaper is not None and reaper.stdin is not None:
        reaper.stdin.write(f"{node_id} {session}\n".encode())
        reaper.stdin.flush()


def stop_reaper(reaper: subprocess.Popen[bytes] | None) -> None:
    """After ray.shutdown(): the sweep ends what Ray left, and the reaper exits."""
    if reaper is None:
        return
    if reaper.stdin is not None:
        reaper.stdin.close()
    try:
        reaper.wait(timeout=15)
    except subprocess.TimeoutExpired:
        reaper.kill()


def single_node(enabled: bool) -> None:
    """A local node on loopback only. Ray resolves 127.0.0.1 to the host's external address
    (so that other nodes could join) unless clusters are off, as on macOS; then every server
    (GCS, raylet, workers, the autoscaler's metrics) binds loopback. Set for Ray's processes
    through the environment, and for this one, which imported Ray already, directly."""
    import ray._private.ray_constants as constants

    if enabled:
        os.environ[SINGLE_NODE_VARIABLE] = "0"
    else:
        os.environ.pop(SINGLE_NODE_VARIABLE, None)
    constants.ENABLE_RAY_CLUSTER = not enabled


def quiet_ray() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def confine_local_ray(run_dir: Path) -> None:
    """Keep a local node's token and result folder out of the home directory."""
    # A token in this process's environment (inherited by Ray's processes) instead of the
    # file ~/.ray/auth_token that Ray would write; token auth stays on.
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    os.environ.setdefault("RAY_AUTH_MODE", "token")
    if os.environ["RAY_AUTH_MODE"] == "token" and not os.environ.get("RAY_AUTH_TOKEN_PATH"):
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    # Ray reads both when it is imported; this is how ray.init itself turns token auth on.
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    # RLlib's Algorithm (a Tune Trainable) makes a result folder under ~/ray_results, a path
    # fixed at import time; the trainer reports through its own status, curve and ledger.
    import ray.tune.trainable.trainable as trainable

    results = run_dir / "rllib"
    results.mkdir(parents=True, exist_ok=True)
    trainable.DEFAULT_STORAGE_PATH = str(results)


def _short_temp_dir(run_dir: Path) -> Path:
    """Ray's session folder lives in `run_dir/ray`, reached through a short link: Ray's Unix
    sockets live in it, and a socket path may not exceed 107 bytes."""
    target = run_dir / "ray"
    target.mkdir(parents=True, exist_ok=True)
    if len(str(target)) <= 40:
        return target
    link = Path(tempfile.mkdtemp(prefix="kh-ray-")) / "r"
    link.symlink_to(target, target_is_directory=True)
    return link


def _remove_link(path: Path) -> None:
    if path.is_symlink():
        holder = path.parent
        path.unlink()
        shutil.rmtree(holder, ignore_errors=True)
