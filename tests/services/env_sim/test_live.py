"""env-sim really listening on a port: the clients, 16 sessions in parallel, and OpenAPI fuzzing."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from koholint.clients.env_sim import EnvSimClient, EnvSimError, RemoteEmulator, RemoteEnv
from koholint.env.zelda import ZeldaEnv
from koholint.game.emulator import Emulator

SESSIONS = 16
STEPS = 40


def test_client_over_a_real_port(live_server):
    with EnvSimClient(live_server.url) as client:
        session = client.create_session(seed=3).id
        result = client.step(session, 1)
        assert len(result.observation) == 128
        assert client.state(session).room.room == 0x21
        assert client.frame_png(session).startswith(b"\x89PNG")
        assert client.roms().roms[0].source == "bundled"
        client.delete_session(session)
        with pytest.raises(EnvSimError) as error:
            client.step(session, 0)
    assert error.value.status == 404
    assert "no session" in error.value.problem["detail"]


def test_remote_env_matches_the_local_env(live_server):
    actions = [1, 1, 4, 4, 5, 0, 3, 2, 6, 1] * 3
    local = ZeldaEnv(sticky_action_probability=0.3)
    local.reset(seed=5)
    expected = [local.step(a)[0] for a in actions]
    local.close()
    with EnvSimClient(live_server.url) as client:
        session = client.create_session(seed=5, sticky_action_probability=0.3).id
        remote = RemoteEnv(client, session)
        got = [remote.step(a)[0] for a in actions]
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_array_equal(want, have)


def test_remote_emulator_drives_like_a_local_one(live_server):
    with EnvSimClient(live_server.url) as client:
        emulator = RemoteEmulator(client, client.create_session().id)
        assert isinstance(emulator, Emulator)
        x = emulator.read_memory(0xFF98)[0]
        saved = emulator.save_state()
        emulator.hold(0x01)  # right
        emulator.tick(12)
        assert emulator.read_memory(0xFF98)[0] > x
        emulator.load_state(saved)
        assert emulator.read_memory(0xFF98)[0] == x


def local_trajectory(seed: int, actions: list[int]) -> list[str]:
    env = ZeldaEnv(sticky_action_probability=0.2)
    env.reset(seed=seed)
    hashes = []
    for action in actions:
        env.step(action)
        hashes.append(hashlib.sha1(bytes(env.gameboy.memory[0xC000:0xE000])).hexdigest())
    env.close()
    return hashes


def remote_trajectory(url: str, session: str, actions: list[int]) -> list[str]:
    with EnvSimClient(url) as client:
        hashes = []
        for action in actions:
            client.step(session, action)
            hashes.append(
                hashlib.sha1(
                    client.read_memory(session, 0xC000, 4096)
                    + client.read_memory(session, 0xD000, 4096)
                ).hexdigest()
            )
        return hashes


@pytest.mark.slow
def test_sixteen_sessions_in_parallel_have_no_cross_talk(settings):
    from tests.services.env_sim.conftest import LiveServer

    settings.max_sessions = SESSIONS
    settings.workers = 4
    rng = np.random.default_rng(0)
    plans = {seed: [int(a) for a in rng.integers(0, 9, STEPS)] for seed in range(SESSIONS)}
    with LiveServer(settings) as server, EnvSimClient(server.url) as client:
        sessions = {
            seed: client.create_session(seed=seed, sticky_action_probability=0.2).id
            for seed in plans
        }
        with ThreadPoolExecutor(max_workers=6) as pool:
            remote = dict(
                zip(
                    plans,
                    pool.map(
                        lambda seed: remote_trajectory(server.url, sessions[seed], plans[seed]),
                        plans,
                    ),
                    strict=True,
                )
            )
    for seed, actions in plans.items():
        assert remote[seed] == local_trajectory(seed, actions), f"session with seed {seed} diverged"


@pytest.mark.slow
def test_openapi_fuzzing_finds_no_server_error(live_server):
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{live_server.url}/openapi.json")
    failures = []
    for operation in schema.get_all_operations():
        operation = operation.ok()

        @settings(
            max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        @given(case=operation.as_strategy())
        def fuzz(case):
            response = case.call()
            if response.status_code >= 500:
                failures.append(
                    (case.method, case.formatted_path, response.status_code, response.text[:200])
                )

        fuzz()
    assert not failures, failures
