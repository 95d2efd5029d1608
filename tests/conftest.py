"""Shared fixtures: one frame-by-frame replay of the walkthrough per test session."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from koholint.game.emulator import GameBoy
from koholint.game.ram import ADDRESS_DOCS, RamAddress, RamReader
from koholint.game.walkthrough import Walkthrough, WalkthroughPlayer, load_walkthrough

TRACED_STATE = (
    RamAddress.DIALOG_STATE,
    RamAddress.DIALOG_ASK_SELECTION,
    RamAddress.ROOM_TRANSITION_STATE,
    RamAddress.LINK_MOTION_STATE,
)


@dataclass
class Snapshot:
    """RAM facts at one mark, read with the library's readers."""

    ram: dict[int, int]
    room_key: tuple[int, int, int]
    visited: set[tuple[int, int]]
    room_objects: list[list[int]]
    entities: list[tuple[int, int, int, int]]
    rupees: int
    link: tuple[int, int]


@dataclass
class WalkthroughTrace:
    walkthrough: Walkthrough
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    per_frame: dict[int, list[int]] = field(
        default_factory=dict
    )  # traced address -> value per frame
    changed: set[int] = field(default_factory=set)  # documented addresses whose value ever changed
    dying_types: set[int] = field(default_factory=set)


def snapshot(ram: RamReader) -> Snapshot:
    addresses = {doc.address for doc in ADDRESS_DOCS}  # first byte of each range
    return Snapshot(
        ram={address: ram.byte(address) for address in addresses},
        room_key=ram.room_key(),
        visited=ram.visited_rooms(),
        room_objects=ram.room_objects(),
        entities=ram.active_entities(),
        rupees=ram.rupees(),
        link=ram.link_position(),
    )


def documented_bytes(gameboy: GameBoy) -> dict[int, bytes]:
    memory = gameboy.memory
    return {
        doc.address: bytes(memory[doc.address : doc.address + doc.size]) for doc in ADDRESS_DOCS
    }


@pytest.fixture(scope="session")
def walkthrough_trace() -> WalkthroughTrace:
    walkthrough = load_walkthrough()
    trace = WalkthroughTrace(walkthrough, per_frame={address: [] for address in TRACED_STATE})
    marks = dict(walkthrough.marks)
    with GameBoy() as gameboy:
        player = WalkthroughPlayer(gameboy, walkthrough)
        first = documented_bytes(gameboy)
        for frame in range(1, walkthrough.frames + 1):
            player.advance_to(frame)
            for address in TRACED_STATE:
                trace.per_frame[address].append(gameboy.ram.byte(address))
            for slot in range(16):
                if gameboy.ram.byte(RamAddress.ENTITIES_STATUS + slot) == 1:
                    trace.dying_types.add(gameboy.ram.byte(RamAddress.ENTITIES_TYPE + slot))
            current = documented_bytes(gameboy)
            trace.changed.update(
                address for address, value in current.items() if value != first[address]
            )
            for name, mark_frame in marks.items():
                if mark_frame == frame:
                    trace.snapshots[name] = snapshot(gameboy.ram)
    return trace


class ServedApp:
    """Any ASGI app served by uvicorn on a loopback port, in a thread."""

    def __init__(self, app: object) -> None:
        import socket
        import threading

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")  # type: ignore[arg-type]
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServedApp:
        import time

        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def serve():
    """serve(app) -> base URL of the app really listening on loopback; stopped after the test."""
    servers: list[ServedApp] = []

    def start(app: object) -> str:
        server = ServedApp(app).__enter__()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.__exit__()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server, a separate process speaking HTTP on a loopback port (any credentials)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("moto server did not start")
    yield f"127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=10)
