"""Monitoring with the real thing: Debian's `prometheus` package brings promtool and the server.

- every PrometheusRule passes `promtool check rules`, and `promtool test rules` runs a firing
  and a quiet unit test for each alert;
- every dashboard query parses (promtool, as recording rules) and every metric that a dashboard
  or alert names is exported by a service of ours, seen by scraping its /metrics, or is on the
  short list of external metrics (Prometheus' `up`, Argo CD's, vLLM's);
- a real Prometheus scrapes the running services while they work, and every dashboard panel's
  query returns data.

Services land one by one: one whose package is not installed yet is left out, and the queries
on its metrics are checked once it is (tests/gitops/fleet.py, `importlib.util.find_spec`).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from tests.conftest import ServedApp
from tests.gitops.fleet import (
    EXTERNAL_METRICS,
    PACKAGES,
    build,
    missing_services,
    present_services,
    series_names,
)
from tests.gitops.rendering import (
    ALERT_TESTS,
    ALERTS,
    REPO_ROOT,
    alert_rules,
    panel_queries,
    require_tool,
)

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}  # fmt: skip
# Which service exports a metric, by its prefix (http_* comes from every service).
OWNERS = {"env_sim_": "env-sim", "planner_": "planner", "trainer_": "trainer",
          "evaluator_": "evaluator", "reward_model_": "reward-model", "console_": "console",
          "llm_local_": "llm-local"}  # fmt: skip


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, labels, keywords, numbers)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        if text[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group().lower() not in KEYWORDS:
            names.add(match.group())
    return names


def every_expression() -> list[tuple[str, str]]:
    """(where, PromQL) for every dashboard target and every alert."""
    panels = [(f"dashboard {board} / {title}", expr) for board, title, expr in panel_queries()]
    alerts = [(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]
    return panels + alerts


def owner(name: str) -> str | None:
    return next((job for prefix, job in OWNERS.items() if name.startswith(prefix)), None)


def test_metric_names_are_read_from_promql() -> None:
    expression = (
        "histogram_quantile(0.95, sum by (judge, le) (rate(evaluator_judge_latency_seconds_bucket"
        '{job="evaluator", le!="+Inf"}[5m] offset 1h))) / on (judge) group_left max(vllm:kv_cache_usage_perc)'
        " > 1e3 or trainer_env_steps_total * 0"
    )
    assert metric_names(expression) == {
        "evaluator_judge_latency_seconds_bucket",
        "vllm:kv_cache_usage_perc",
        "trainer_env_steps_total",
    }


def write_rule_file(path: Path) -> Path:
    """The PrometheusRule's spec is a plain Prometheus rule file."""
    path.write_text(yaml.safe_dump(yaml.safe_load(ALERTS.read_text())["spec"]))
    return path


def promtool(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    executable = require_tool("promtool", "prometheus")
    return subprocess.run(
        [executable, *arguments], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_alert_rules_pass_promtool_check(tmp_path: Path) -> None:
    rules = write_rule_file(tmp_path / "alerts.rules.yaml")
    result = promtool("check", "rules", str(rules), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_alert_unit_tests_pass_promtool(tmp_path: Path) -> None:
    write_rule_file(tmp_path / "alerts.rules.yaml")
    shutil.copy(ALERT_TESTS, tmp_path / ALERT_TESTS.name)
    result = promtool("test", "rules", ALERT_TESTS.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_unit_tests_fail_when_a_threshold_moves(tmp_path: Path) -> None:
    rules = write_rule_file(tmp_path / "alerts.rules.yaml")
    rules.write_text(rules.read_text().replace("> 0.3", "> 0.9"))
    shutil.copy(ALERT_TESTS, tmp_path / ALERT_TESTS.name)
    result = promtool("test", "rules", ALERT_TESTS.name, cwd=tmp_path)
    assert result.returncode != 0
    assert "JudgeAbstentionRateHigh" in result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    evaluations = [
        evaluation
        for test in yaml.safe_load(ALERT_TESTS.read_text())["tests"]
        for evaluation in test.get("alert_rule_test", [])
    ]
    for rule in alert_rules():
        mine = [e for e in evaluations if e["alertname"] == rule["alert"]]
        assert any(e["exp_alerts"] for e in mine), f"{rule['alert']}: no test where it fires"
        assert any(not e["exp_alerts"] for e in mine), f"{rule['alert']}: no test where it is quiet"


def test_every_alert_is_explained_in_the_operations_guide() -> None:
    guide = (REPO_ROOT / "docs" / "operations.md").read_text()
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in guide.splitlines()
        if line.startswith("#")
    }
    for rule in alert_rules():
        anchor = rule["annotations"]["runbook_url"].rpartition("#")[2]
        assert anchor == rule["alert"].lower(), rule["alert"]
        assert anchor in headings, f"docs/operations.md has no section for {rule['alert']}"


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    queries = panel_queries()
    assert queries, "no dashboard queries found"
    rules = [
        {"record": f"dashboard:query_{index}", "expr": expr}
        for index, (_, _, expr) in enumerate(queries)
    ]
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = promtool("check", "rules", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every series name the present services' /metrics pages name, scraped in process."""
    names: set[str] = set()
    for job in present_services():
        app = build(job, tmp_path_factory.mktemp(job))
        with TestClient(app) as client:
            assert client.get("/healthz").status_code == 200, job
            response = client.get("/metrics")
            assert response.status_code == 200, job
            names |= series_names(response.text)
    return names


@pytest.mark.slow  # starts every service once (8-20 s: the console renders its map)
def test_dashboards_and_alerts_use_only_exported_metrics(exported: set[str]) -> None:
    missing = missing_services()
    for where, expression in every_expression():
        for name in metric_names(expression):
            if name in EXTERNAL_METRICS or owner(name) in missing:
                continue  # external, or its service has not landed: checked once it has
            assert name in exported, f"{where} uses {name}, which no service exports"


def test_every_service_metric_contract_is_on_a_dashboard() -> None:
    """The evaluator's and reward model's agreed names all appear on the dashboards."""
    used = set().union(*(metric_names(expr) for _, _, expr in panel_queries()))
    contract = {
        "evaluator_segments_scored_total", "evaluator_abstentions_total",
        "evaluator_invalid_answers_total", "evaluator_judge_latency_seconds_bucket",
        "evaluator_consumer_lag", "evaluator_agreement_kappa", "evaluator_dead_letters_total",
        "reward_model_pairs", "reward_model_versions_total", "reward_model_heldout_accuracy",
        "reward_model_training_seconds_sum", "reward_model_rejected_total",
    }  # fmt: skip
    assert contract <= used, sorted(contract - used)


# -- a real Prometheus over the running fleet -------------------------------------------------

TINY_RUN = {
    "run": "monitored", "total_env_steps": 512, "num_env_runners": 0, "envs_per_env_runner": 1,
    "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128,
    "env": {"max_episode_steps": 128}, "export_every_episodes": 1, "segment_steps": 64,
    "checkpoint_every_iterations": 1,
}  # fmt: skip


@contextlib.contextmanager
def start_prometheus(tmp: Path, targets: dict[str, str]) -> Iterator[str]:
    executable = require_tool("prometheus", "prometheus")
    scrape_configs = [
        {"job_name": job, "static_configs": [{"targets": [url.removeprefix("http://")]}]}
        for job, url in targets.items()
    ]
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": scrape_configs}  # fmt: skip
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [executable, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("w"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: httpx.get(f"{url}/-/ready", timeout=2).status_code == 200, 60, "prometheus"
        )
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what} not ready after {seconds} s")


def query(prometheus: str, expression: str) -> list[dict[str, object]]:
    response = httpx.get(f"{prometheus}/api/v1/query", params={"query": expression}, timeout=10)
    body = response.json()
    assert body["status"] == "success", f"{expression}: {body}"
    return body["data"]["result"]  # type: ignore[no-any-return]


def situation(state: str) -> dict[str, object]:
    from koholint.game.emulator import GameBoy
    from koholint.planning.view import read_view

    with GameBoy() as gameboy:
        gameboy.reset(state)
        return read_view(gameboy).situation().model_dump()


def poll(
    client: httpx.Client, path: str, done: tuple[str, ...], seconds: float
) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = client.get(path).json()
        if status.get("state") in done:
            return status  # type: ignore[no-any-return]
        time.sleep(0.5)
    raise AssertionError(f"{path} did not finish in {seconds} s: {status}")


def make_traffic(urls: dict[str, str]) -> None:
    """Real work on every service: env-sim steps, a planner decision through the local model, a
    tiny training run that exports segments, the judges scoring them, a reward-model training."""
    with httpx.Client(base_url=urls["env-sim"], timeout=60) as env_sim:
        session = env_sim.post("/v1/sessions", json={}).json()["id"]
        for _ in range(3):
            assert env_sim.post(
                f"/v1/sessions/{session}/steps", json={"actions": [1, 2, 3, 4] * 8}
            ).is_success
    with httpx.Client(base_url=urls["planner"], timeout=300) as planner:
        decision = planner.post(
            "/v1/decide", json={"situation": situation("before_puzzle"), "seed": 7}
        )
        assert decision.is_success, decision.text
    with httpx.Client(base_url=urls["trainer"], timeout=60) as trainer:
        assert trainer.post("/v1/runs", json=TINY_RUN).status_code == 201
        status = poll(trainer, f"/v1/runs/{TINY_RUN['run']}", ("finished", "failed"), 280)
        assert status["state"] == "finished", status
    if "evaluator" in urls:
        with httpx.Client(base_url=urls["evaluator"], timeout=60) as evaluator:
            job = evaluator.post("/v1/evaluations", json={"run": TINY_RUN["run"]})
            assert job.status_code == 202, job.text
            path = f"/v1/evaluations/{job.json()['id']}"
            status = poll(evaluator, path, ("succeeded", "failed"), 180)
            assert status["state"] == "succeeded", status
    if "reward-model" in urls:
        with httpx.Client(base_url=urls["reward-model"], timeout=120) as reward_model:
            reward_model.post("/v1/train", json={})
    if "console" in urls:
        httpx.get(f"{urls['console']}/healthz", timeout=10)


VLLM_METRICS = EXTERNAL_METRICS - {"up"}


def panels_without_data(prometheus: str, present: list[str]) -> tuple[int, list[str]]:
    """(queries checked, those that returned nothing); vLLM's and absent services' are skipped."""
    checked, empty = 0, []
    for board, title, expression in panel_queries():
        names = metric_names(expression)
        if names <= VLLM_METRICS or any(owner(name) not in (None, *present) for name in names):
            continue  # only model servers export vLLM's metrics
        checked += 1
        if not query(prometheus, expression):
            empty.append(f"{board} / {title}: {expression}")
    return checked, empty


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_real_prometheus_returns_data_for_every_panel(tmp_path: Path) -> None:
    present = present_services()
    for required in ("env-sim", "planner", "trainer", "llm-local"):
        assert required in present, f"{required} ({PACKAGES[required]}) must be installed"
    store = tmp_path / "fleet"
    store.mkdir()
    servers: list[ServedApp] = []
    urls: dict[str, str] = {}

    def serve(job: str, **options: object) -> None:
        server = ServedApp(build(job, store, **options)).__enter__()
        servers.append(server)
        urls[job] = server.url

    try:
        serve("llm-local")
        serve("env-sim")
        serve("planner", env_sim_url=urls["env-sim"], llm_url=urls["llm-local"])
        for job in ("trainer", "evaluator", "reward-model", "console"):
            if job in present:
                serve(job)
        with start_prometheus(tmp_path, urls) as prometheus:
            wait_for(lambda: len(query(prometheus, "up == 1")) == len(urls), 60, "every target up")
            make_traffic(urls)
            time.sleep(4)  # a few scrapes after the last piece of work
            checked, empty = panels_without_data(prometheus, present)
        assert not empty, "panels without data:\n" + "\n".join(empty)
        if not missing_services():
            vllm_only = [e for *_, e in panel_queries() if metric_names(e) <= VLLM_METRICS]
            assert checked == len(panel_queries()) - len(vllm_only), "a panel query was skipped"
    finally:
        for server in reversed(servers):
            server.__exit__()
