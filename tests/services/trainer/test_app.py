"""The trainer service: typed bodies, problem+json errors naming the field, run control behind a
token beyond localhost, bounded run memory; and a run's lifecycle over HTTP (slow)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.services.trainer.ppo.test_run import TINY

from koholint.store import LocalStore
from koholint.web.problems import PROBLEM_JSON, ConflictError, UnprocessableError
from orchestrator.loop import count_segments
from trainer.app import create_app
from trainer.config import Settings
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun
from trainer.service import Trainer

pytestmark = pytest.mark.anyio
TOKEN = "s3cret-token-1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"), **values)


@contextlib.asynccontextmanager
async def client_of(
    app: object, client: tuple[str, int] = ("127.0.0.1", 50000), **headers: str
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        app.router.lifespan_context(app),  # type: ignore[attr-defined]
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=client),  # type: ignore[arg-type]
            base_url="http://trainer",
            headers=headers,
        ) as http,
    ):
        yield http


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON)
    body = response.json()
    assert body["status"] == status
    if field is not None:
        assert field in {error["field"] for error in body.get("errors") or []}, body
    return body


@pytest.mark.parametrize(
    "name", ["store_url", "run_dir", "ray_address", "redis_url", "planner_url"]
)
async def test_a_body_naming_a_deployment_setting_is_refused(tmp_path: Path, name: str):
    async with client_of(create_app(settings(tmp_path))) as http:
        refused = await http.post("/v1/runs", json={name: "/tmp/elsewhere"})
    assert_problem(refused, 422, name)
    assert not (Path("/tmp/elsewhere") / "koholint-check").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"total_env_steps": "lots"}, "total_env_steps"),
        ({"batch": 3}, "batch"),
        ({"env": {"frame_skip": 0}}, "env.frame_skip"),
        ({"env": {"frame_skip": "fast"}}, "env.frame_skip"),
        ({"env": {"rom": "/etc/passwd"}}, "env.rom"),
        ({"hidden_sizes": [64] * 9}, "hidden_sizes"),
        ({"run": "../up"}, "run"),
        ({"resume_from": "../../etc"}, "resume_from"),
    ],
)
async def test_malformed_bodies_get_problem_json_naming_the_field(tmp_path: Path, body, field):
    async with client_of(create_app(settings(tmp_path))) as http:
        refused = await http.post("/v1/runs", json=body)
    problem = assert_problem(refused, 422, field)
    assert "not supported between" not in refused.text  # no Python error text
    assert problem["detail"]


async def test_cross_field_and_preflight_errors_are_422_naming_the_field(tmp_path: Path):
    async with client_of(create_app(settings(tmp_path))) as http:
        small = await http.post("/v1/runs", json={"train_batch_size": 64, "minibatch_size": 128})
        unknown = await http.post("/v1/runs", json={"resume_from": "gone-step000000000256"})
        runs = (await http.get("/v1/runs")).json()
    assert_problem(small, 422, "train_batch_size")
    assert (
        "no checkpoint 'gone-step000000000256'"
        in assert_problem(unknown, 422, "resume_from")["detail"]
    )
    assert runs == {"runs": []}  # nothing started


@pytest.mark.parametrize("run", ["../../etc", "☃", "a b", "x" * 129, ""])
async def test_checkpoint_queries_are_validated(tmp_path: Path, run: str):
    async with client_of(create_app(settings(tmp_path))) as http:
        listed = await http.get("/v1/checkpoints", params={"run": run})
        best = await http.get("/v1/checkpoints/best", params={"run": run, "metric": "rooms"})
    assert_problem(listed, 422, "query.run")
    assert_problem(best, 422, "query.run")


async def test_no_run_yet_lists_empty(tmp_path: Path):
    async with client_of(create_app(settings(tmp_path))) as http:
        checkpoints = await http.get("/v1/checkpoints")
        runs = await http.get("/v1/runs")
        best = await http.get("/v1/checkpoints/best", params={"metric": "rooms"})
        metric = await http.get("/v1/checkpoints/best", params={"metric": "../x"})
        missing = await http.get("/v1/runs/nope")
    assert checkpoints.status_code == 200
    assert checkpoints.json() == {"run": None, "checkpoints": []}
    assert runs.json() == {"runs": []}
    assert_problem(best, 404)
    assert_problem(metric, 422, "query.metric")
    assert_problem(missing, 404)


async def test_bodies_over_the_limit_are_413(tmp_path: Path):
    async with client_of(create_app(settings(tmp_path))) as http:
        declared = await http.post(
            "/v1/runs",
            content=b"{" + b" " * 100_000 + b"}",
            headers={"content-type": "application/json"},
        )

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(100):
                yield b" " * 1024

        chunked = await http.post(
            "/v1/runs", content=chunks(), headers={"content-type": "application/json"}
        )
    assert assert_problem(declared, 413)["limit_bytes"] == 64 * 1024
    assert_problem(chunked, 413)


async def test_run_control_needs_the_token_when_one_is_set(tmp_path: Path):
    app = create_app(settings(tmp_path, token=TOKEN))
    async with client_of(app) as http:
        missing = await http.post("/v1/runs", json={"total_env_steps": "lots"})
        wrong = await http.post("/v1/runs", json={}, headers={"authorization": "Bearer nope"})
        stop = await http.post("/v1/runs/x/stop")
        read = await http.get("/v1/runs")
        allowed = await http.post(
            "/v1/runs",
            json={"total_env_steps": "lots"},
            headers={"authorization": f"Bearer {TOKEN}"},
        )
    assert "token" in assert_problem(missing, 401)["detail"]
    assert_problem(wrong, 401)
    assert_problem(stop, 401)
    assert read.status_code == 200  # reading needs no token
    assert_problem(allowed, 422, "total_env_steps")  # past the token, to validation


async def test_without_a_token_only_loopback_clients_control_runs(tmp_path: Path):
    async with client_of(create_app(settings(tmp_path)), client=("10.1.2.3", 40000)) as http:
        remote = await http.post("/v1/runs", json={})
    assert "KOHOLINT_TRAINER_TOKEN" in assert_problem(remote, 401)["detail"]


def test_the_service_refuses_to_listen_beyond_loopback_without_a_token(tmp_path: Path):
    with pytest.raises(RuntimeError, match="needs a token"):
        create_app(settings(tmp_path, host="0.0.0.0"))
    create_app(settings(tmp_path, host="0.0.0.0", token=TOKEN))
    create_app(settings(tmp_path, host="::1"))


def test_every_error_response_is_documented(tmp_path: Path):
    spec = create_app(settings(tmp_path)).openapi()
    expected = {
        ("/v1/runs", "post"): {"401", "409", "413", "422"},
        ("/v1/runs/{run}", "get"): {"404", "422"},
        ("/v1/runs/{run}/stop", "post"): {"401", "404", "422"},
        ("/v1/checkpoints", "get"): {"422", "503"},
        ("/v1/checkpoints/best", "get"): {"404", "422", "503"},
    }
    for (path, method), statuses in expected.items():
        responses = spec["paths"][path][method]["responses"]
        assert statuses <= set(responses), (path, method)
        for status in statuses:
            assert PROBLEM_JSON in responses[status]["content"], (path, status)
    body = spec["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]
    schema = spec["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[-1]]
    assert schema["additionalProperties"] is False
    assert "store_url" not in schema["properties"]
    assert schema["properties"]["total_env_steps"]["minimum"] == 1


def test_ended_runs_are_pruned_to_a_bound(tmp_path: Path):
    trainer = Trainer(store=None, settings=settings(tmp_path, max_kept_runs=3), environ={})  # type: ignore[arg-type]
    for index in range(6):
        run = TrainingRun(TrainConfig.load({"run": f"r{index}"}, {}))
        run.status.state = "failed" if index % 2 else "finished"
        trainer._prune()
        trainer.runs[run.config.run] = run
    assert list(trainer.runs) == ["r3", "r4", "r5"]
    active = TrainingRun(TrainConfig.load({"run": "live"}, {}))
    active.status.state = "running"
    trainer.runs = {"live": active, **trainer.runs}
    trainer._prune()
    assert "live" in trainer.runs  # an active run is never pruned


def test_concurrent_starts_start_one_run(tmp_path: Path, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(Trainer, "_run", staticmethod(lambda run, span: release.wait(30)))
    trainer = Trainer(LocalStore(tmp_path / "store"), settings(tmp_path), environ={})
    outcomes: list[str] = []

    def start() -> None:
        try:
            outcomes.append(trainer.start({}).config.run)
        except ConflictError:
            outcomes.append("409")

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    release.set()
    assert sorted(outcomes)[:2] == ["409", "409"]
    assert len(trainer.runs) == 1


@pytest.mark.parametrize("run", ["a b", "☃", "x" * 129])
async def test_run_names_in_paths_are_validated(tmp_path: Path, run: str):
    async with client_of(create_app(settings(tmp_path))) as http:
        status = await http.get(f"/v1/runs/{run}")
        stop = await http.post(f"/v1/runs/{run}/stop")
    assert_problem(status, 422, "path.run")
    assert_problem(stop, 422, "path.run")


@pytest.mark.slow
async def test_run_lifecycle_over_http(tmp_path: Path):
    app = create_app(settings(tmp_path))
    async with client_of(app) as http:
        created = await http.post("/v1/runs", json={**TINY, "run": "api", "total_env_steps": 768})
        assert created.status_code == 201, created.text
        busy = await http.post("/v1/runs", json={**TINY, "run": "other"})
        assert assert_problem(busy, 409)["active_run"] == "api"
        # Ray takes seconds to start, so the run is still starting or running here.
        assert 'trainer_run_active{run="api"} 1.0' in (await http.get("/metrics")).text
        again = await http.post("/v1/runs", json={})
        assert_problem(again, 409)
        for _ in range(240):
            status = (await http.get("/v1/runs/api")).json()
            if status["state"] in ("finished", "failed"):
                break
            await asyncio.sleep(0.5)
        assert status["state"] == "finished", status
        assert status["env_steps"] >= 768
        assert status["steps_per_second"] > 0
        assert status["export"]["written"] > 0
        assert status["export"]["dropped"] == status["export"]["failed"] == 0
        # Finished means exported: every segment counted is in the store, none still in flight.
        assert count_segments(LocalStore(tmp_path / "store"), "api") == status["export"]["written"]
        assert [run["run"] for run in (await http.get("/v1/runs")).json()["runs"]] == ["api"]
        metrics = (await http.get("/metrics")).text
        assert f'trainer_env_steps_total{{run="api"}} {float(status["env_steps"])}' in metrics
        assert 'trainer_export_segments_total{outcome="dropped",run="api"} 0.0' in metrics
        assert 'trainer_archive_cells{run="api"}' in metrics
        assert 'trainer_run_active{run="api"} 0.0' in metrics
        listed = (await http.get("/v1/checkpoints")).json()  # the latest run by default
        assert listed["run"] == "api"
        assert listed["checkpoints"]
        best = (
            await http.get("/v1/checkpoints/best", params={"run": "api", "metric": "archive_cells"})
        ).json()
        assert best["run"] == "api"
        missing = await http.get(
            "/v1/checkpoints/best", params={"run": "api", "metric": "nonsense"}
        )
        assert_problem(missing, 404)
        stopped = await http.post("/v1/runs/api/stop")
        assert stopped.json()["state"] == "finished"
        assert (await http.get("/readyz")).status_code == 200


@pytest.mark.slow
async def test_a_run_is_traced_as_a_child_of_the_request_that_started_it(tmp_path: Path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    app = create_app(settings(tmp_path), span_exporter=exporter)
    async with client_of(app) as http:
        created = await http.post("/v1/runs", json={**TINY, "run": "traced"})
        assert created.status_code == 201, created.text
        for _ in range(240):
            if (await http.get("/v1/runs/traced")).json()["state"] in ("finished", "failed"):
                break
            await asyncio.sleep(0.5)
        app.state.trainer.shutdown()  # the thread ends its span when the run returns
    spans = exporter.get_finished_spans()
    (run_span,) = [span for span in spans if span.name == "training run"]
    (request_span,) = [span for span in spans if span.name == "POST /v1/runs"]
    assert run_span.parent is not None
    assert run_span.parent.span_id == request_span.context.span_id
    assert run_span.context.trace_id == request_span.context.trace_id
    assert run_span.attributes["koholint.run"] == "traced"
    assert run_span.attributes["koholint.state"] == "finished"
    assert run_span.attributes["koholint.env_steps"] >= TINY["total_env_steps"]
    assert run_span.end_time >= request_span.end_time  # it outlived the request


def written_files(tmp_path: Path) -> list[Path]:
    return sorted(path for path in tmp_path.rglob("*") if path.is_file())


@pytest.mark.parametrize("run", ["..", ".", ".hidden", "../x", "/etc"])
async def test_unsafe_run_names_are_422_before_anything_is_written(tmp_path: Path, run: str):
    before = written_files(tmp_path)
    async with client_of(create_app(settings(tmp_path))) as http:
        created = await http.post("/v1/runs", json={"run": run})
        listed = await http.get("/v1/checkpoints", params={"run": run})
        best = await http.get("/v1/checkpoints/best", params={"run": run, "metric": "rooms"})
    assert_problem(created, 422, "run")
    assert_problem(listed, 422, "query.run")
    assert_problem(best, 422, "query.run")
    assert written_files(tmp_path) == before


async def test_a_trajectory_name_no_store_can_hold_is_422_not_503(tmp_path: Path):
    """'__main__' is a file name but not an object key (keys start with a letter or digit):
    the caller's mistake, named, not the store's outage (found by schemathesis)."""
    before = written_files(tmp_path)
    body = {"run": "robust", "phase": "robustify", "curriculum": {"trajectory": "__main__"}}
    async with client_of(create_app(settings(tmp_path))) as http:
        created = await http.post("/v1/runs", json=body)
    assert "invalid object key" in assert_problem(created, 422, "curriculum.trajectory")["detail"]
    assert written_files(tmp_path) == before


@pytest.mark.parametrize(
    "trajectory", ["/etc/hostname", "../../../../etc/hostname", "runs/../../x", ".secret", "a//b"]
)
async def test_a_trajectory_outside_the_stored_artifacts_is_422(tmp_path: Path, trajectory: str):
    before = written_files(tmp_path)
    body = {"run": "robust", "phase": "robustify", "curriculum": {"trajectory": trajectory}}
    async with client_of(create_app(settings(tmp_path))) as http:
        created = await http.post("/v1/runs", json=body)
        runs = (await http.get("/v1/runs")).json()
    assert (
        "not a stored trajectory" in assert_problem(created, 422, "curriculum.trajectory")["detail"]
    )
    assert runs == {"runs": []}
    assert written_files(tmp_path) == before


def test_a_trajectory_is_a_store_key_or_a_file_in_the_trajectory_folder(tmp_path: Path):
    store = LocalStore(tmp_path / "store")
    store.put("trajectories/win.actions", bytes([1, 2, 3]))
    folder = tmp_path / "wins"
    folder.mkdir()
    (folder / "seed0.actions").write_bytes(bytes([4, 5]))
    trainer = Trainer(store, settings(tmp_path, trajectory_dir=str(folder)), environ={})
    from_store = Path(trainer._stored_trajectory("trajectories/win.actions", "r1"))
    assert from_store.read_bytes() == bytes([1, 2, 3])
    assert from_store.is_relative_to((tmp_path / "runs" / "r1").resolve())
    assert Path(trainer._stored_trajectory("seed0.actions", "r1")) == folder / "seed0.actions"
    with pytest.raises(UnprocessableError, match="no trajectory 'gone.actions'"):
        trainer._stored_trajectory("gone.actions", "r1")


async def test_a_failed_run_shows_its_error_without_the_traceback(tmp_path: Path):
    app = create_app(settings(tmp_path))
    async with client_of(app) as http:
        run = TrainingRun(TrainConfig.load({"run": "broken"}, {}))
        run.status.state = "failed"
        run.status.error = (
            "ray::CurriculumActor.__init__() (pid=1, ip=127.0.0.1)\nTraceback (most recent "
            'call last):\n  File "/srv/curriculum.py", line 72, in read_trajectory\n    raise '
            "ValueError(...)\nValueError: curriculum trajectory is not an actions file"
        )
        app.state.trainer.runs["broken"] = run
        status = (await http.get("/v1/runs/broken")).json()
    assert status["error"] == "ValueError: curriculum trajectory is not an actions file"


@pytest.mark.parametrize("rom", ["/etc/hostname", "../worlds/a", "a/cartridge.gb", "..", ".x"])
async def test_a_world_over_http_is_a_name_in_the_worlds_folder_never_a_path(
    tmp_path: Path, rom: str
):
    (tmp_path / "worlds").mkdir()
    before = written_files(tmp_path)
    body = {"run": "elsewhere", "rom": rom}
    app = create_app(settings(tmp_path, worlds_dir=str(tmp_path / "worlds")))
    async with client_of(app) as http:
        created = await http.post("/v1/runs", json=body)
        runs = (await http.get("/v1/runs")).json()
    assert "not a world's name" in assert_problem(created, 422, "rom")["detail"]
    assert runs == {"runs": []}
    assert written_files(tmp_path) == before


async def test_a_world_named_over_http_must_be_in_the_folder_and_the_folder_configured(
    tmp_path: Path,
):
    from koholint.game.rom import bundled_cartridge

    worlds = tmp_path / "worlds"
    (worlds / "island").mkdir(parents=True)
    (worlds / "island" / "cartridge.gb").write_bytes(bundled_cartridge().read_bytes())
    async with client_of(create_app(settings(tmp_path))) as http:
        unconfigured = await http.post("/v1/runs", json={"run": "a", "rom": "island"})
    assert "no worlds folder" in assert_problem(unconfigured, 422, "rom")["detail"]
    async with client_of(create_app(settings(tmp_path, worlds_dir=str(worlds)))) as http:
        missing = await http.post("/v1/runs", json={"run": "b", "rom": "atoll"})
    assert "no world 'atoll'" in assert_problem(missing, 422, "rom")["detail"]
    trainer = Trainer(None, settings(tmp_path, worlds_dir=str(worlds)), environ={})  # type: ignore[arg-type]
    assert trainer._world("island") == str((worlds / "island").resolve())


def test_a_run_that_names_no_rom_file_fails_preflight_naming_the_setting(tmp_path: Path):
    from trainer.ppo.config import TrainConfigError

    config = TrainConfig.load({"run": "nowhere", "rom": str(tmp_path / "missing.gb")}, environ={})
    run = TrainingRun(config, settings(tmp_path).deployment())
    with pytest.raises(TrainConfigError, match="rom: .*no such file") as raised:
        run.preflight()
    assert raised.value.field == "rom"
