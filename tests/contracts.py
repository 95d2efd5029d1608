"""Contract tests every service shares: Schemathesis against the app's own OpenAPI spec, and
malformed requests that must come back as problem+json naming the field.

``check_openapi_contract(app)`` serves the ASGI app with uvicorn on a loopback port (the
real HTTP stack: chunked bodies, keep-alive, 405s) and runs the ``schemathesis`` CLI on it
with **every** check (server errors, status codes, content types, headers and bodies
conforming to the spec, negative data rejected, positive data accepted, unsupported
methods answered 405 with ``Allow``, stateful use-after-free ...). It fails the test with
the CLI's report when anything fails.

    from tests.contracts import check_openapi_contract

    @pytest.mark.slow
    def test_openapi_contract(app):
        check_openapi_contract(app, max_examples=10)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx
from tests.conftest import ServedApp

PROBLEM_JSON = "application/problem+json"
# Statuses a positive (schema-valid) request may get: what Schemathesis allows by default (a
# drawn id names nothing: 404; busy: 409; limits: 429); `opaque_bodies` adds more per path.
POSITIVE_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
# Statuses that reject a schema-violating request: Schemathesis's defaults, and 413, which
# the body limit answers before a schema is applied (e.g. to too many 128-float rows).
NEGATIVE_STATUSES = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428",
                     "429", "5xx"]  # fmt: skip


def check_openapi_contract(
    app: object,
    *,
    max_examples: int = 10,
    opaque_bodies: Mapping[str, Sequence[int]] | None = None,
    headers: Mapping[str, str] | None = None,
    tmp_dir: Path | None = None,
    timeout_s: float = 600,
    exclude_paths: Sequence[str] = (),
) -> None:
    """Serve `app` and fail (with the report) unless Schemathesis finds 0 failures.

    `opaque_bodies`: path template -> statuses a schema-valid request may also get there,
    where part of the body is data no schema can judge (save-state bytes, a ROM file, a JSON
    Schema for the model's answer): e.g. ``{"/v1/sessions/{session_id}/load": [422]}``.
    `exclude_paths`: path templates left out, each for a reason the caller states (an endless
    event stream cannot be answered within a request timeout).
    """
    with ServedApp(app) as server:
        run_schemathesis(
            f"{server.url}/openapi.json", max_examples=max_examples,
            opaque_bodies=opaque_bodies, headers=headers, tmp_dir=tmp_dir,
            timeout_s=timeout_s, exclude_paths=exclude_paths,
        )  # fmt: skip


def run_schemathesis(
    spec_url: str,
    *,
    max_examples: int = 10,
    opaque_bodies: Mapping[str, Sequence[int]] | None = None,
    headers: Mapping[str, str] | None = None,
    tmp_dir: Path | None = None,
    timeout_s: float = 600,
    request_timeout_s: float = 60,
    exclude_paths: Sequence[str] = (),
) -> None:
    """The ``schemathesis run`` CLI with all checks and a fixed seed; AssertionError on failure."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "run", spec_url,
        "--checks", "all", "--workers", "1", "--max-examples", str(max_examples),
        "--seed", "18", "--suppress-health-check", "all", "--no-color",
        "--request-timeout", str(request_timeout_s),
        # A response-time limit belongs to a benchmark: shared test machines are slow at times.
        "--max-response-time", str(request_timeout_s),
    ]  # fmt: skip
    for path in exclude_paths:
        command += ["--exclude-path", path]
    for name, value in (headers or {}).items():
        command += ["--header", f"{name}: {value}"]
    folder = Path(tempfile.mkdtemp(prefix="schemathesis-", dir=tmp_dir))
    command[1:1] = ["--config-file", str(_config_file(opaque_bodies or {}, folder))]
    # cwd: the CLI keeps a cache folder (.schemathesis) where it runs.
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=folder)
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"Schemathesis failed:\n{report[-20000:]}"
    counts = re.search(r"(\d+) generated, (\d+) passed\s*$", report, re.MULTILINE)
    assert counts, report[-2000:]
    assert int(counts[1]) == int(counts[2]) > 0, report[-2000:]


def _config_file(opaque_bodies: Mapping[str, Sequence[int]], folder: Path) -> Path:
    """A schemathesis.toml: negative data may be refused with 413 too; positive data may get
    the extra statuses on the opaque paths."""
    lines = [
        "[checks.negative_data_rejection]",
        f"expected-statuses = {json.dumps(NEGATIVE_STATUSES)}",
        "",
    ]
    for path, statuses in opaque_bodies.items():
        expected = POSITIVE_STATUSES + [str(status) for status in statuses]
        lines += [
            "[[operations]]",
            f"include-path = {json.dumps(path)}",
            f"checks.positive_data_acceptance.expected-statuses = {json.dumps(expected)}",
            "",
        ]
    config = folder / "schemathesis.toml"
    config.write_text("\n".join(lines))
    return config


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> dict:
    """The response is problem+json with `status`; with `field`, its `errors` name that field."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON), response.headers
    problem = response.json()
    assert problem["status"] == status
    assert problem["detail"]
    assert problem["title"]
    if field is not None:
        fields = [error["field"] for error in problem.get("errors") or []]
        assert field in fields or problem.get("field") == field, problem
    return problem  # type: ignore[no-any-return]


def assert_problem_spec(spec: Mapping) -> None:
    """Every error response of every operation is documented as problem+json only."""
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert list(response["content"]) == [PROBLEM_JSON], (method, path, status)
    assert "HTTPValidationError" not in spec["components"]["schemas"]
