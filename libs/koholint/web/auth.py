"""Who may change state: one rule for every state-changing route of every service.

A request that changes state (starts a run or a job, trains, opens, drives or saves an
emulator session) needs ``Authorization: Bearer <token>`` when the service has a token;
without one, only loopback clients may send it. The client is the TCP peer, unless the peer
is one of the operator's ``trusted_proxies``: then it is the rightmost address of
``X-Forwarded-For`` that is not a trusted proxy (entries a client wrote itself sit left of
it). ``koholint serve`` runs uvicorn with its own proxy-header handling off, so this rule is
the only one that reads forwarded headers.

    class Settings(ControlAccess, BaseSettings): ...      # token, trusted_proxies

    @router.post("/v1/train", dependencies=[ControlDep], responses=problem_responses(401))

Every route whose method is not GET has the rule: it starts, stops, drives, trains, loads or
spends something (a planner's decision updates the session's memory, a reward-model score
loads a version, a chat completion spends the model). Open are reads (GET) and the routes
every service shares (``SHARED_OPEN_ROUTES``); ``open_routes(app)`` lists a service's, and
docs/operations.md ("Open routes") holds the table a test keeps equal to it.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, Field, SecretStr, field_validator

from koholint.web.problems import ProblemError

PLACEHOLDER_TOKENS = ("changeme", "change-me", "token", "secret")
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
SHARED_OPEN_ROUTES = {
    "GET /healthz": "liveness probe: kubelets and compose ask without credentials",
    "GET /readyz": "readiness probe: kubelets and compose ask without credentials",
    "GET /metrics": "Prometheus scrapes without credentials; counters and timings only",
    "GET /openapi.json": "the API's description, the same for everyone",
    "GET /docs": "the API's description, the same for everyone",
    "GET /docs/oauth2-redirect": "part of /docs",
    "GET /redoc": "the API's description, the same for everyone",
}
"""Routes every service answers without a token even when it has one, and why."""
READ_ONLY_WHY = "reads only"
"""Why a service's own GET routes are open: a read changes nothing a later request sees."""


class UnauthorizedError(ProblemError):
    status_code = 401
    title = "Unauthorized"


class ControlAccess(BaseModel):
    """The settings of the rule, inherited by each service's Settings (env prefix and all)."""

    token: SecretStr = Field(
        SecretStr(""),
        description="bearer token that state-changing requests must carry; without one only "
        "loopback clients may change state",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For "
        "names the client; empty: forwarded headers are never believed",
    )

    @field_validator("token")
    @classmethod
    def _no_placeholder_token(cls, value: SecretStr) -> SecretStr:
        if value.get_secret_value().lower() in PLACEHOLDER_TOKENS:
            raise ValueError("set a real token (e.g. `openssl rand -hex 32`), not a placeholder")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return value

    def access_token(self) -> str:
        """The token state-changing requests must carry ('' when none is set)."""
        return self.token.get_secret_value()

    def token_setting(self) -> str:
        """The environment variable an operator sets the token with (named in a 401)."""
        prefix = str(self.model_config.get("env_prefix", ""))
        return f"{prefix}TOKEN" if prefix else "the service's token setting"


def is_loopback(host: str | None) -> bool:
    """localhost, 127.0.0.0/8, ::1 and IPv4-mapped loopback; any other name is beyond."""
    if host is None:
        return False
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme in any case), or None."""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _trusted(host: str, proxies: list[IPNetwork]) -> bool:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return any(address in network for network in proxies)


def client_host(request: Request, trusted_proxies: list[str]) -> str | None:
    """The client's address: the peer, or behind trusted proxies the nearest untrusted hop."""
    peer = request.client.host if request.client else None
    proxies = [ipaddress.ip_network(entry, strict=False) for entry in trusted_proxies]
    if peer is None or not proxies or not _trusted(peer, proxies):
        return peer
    hops = [
        hop.strip()
        for header in request.headers.getlist("x-forwarded-for")
        for hop in header.split(",")
        if hop.strip()
    ]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


def check_access(request: Request, access: ControlAccess) -> None:
    """Raise 401 unless the request may change state (see the module docstring)."""
    token = access.access_token()
    if token:
        given = bearer_token(request.headers.get("authorization", ""))
        if given is None or not hmac.compare_digest(given.encode(), token.encode()):
            raise UnauthorizedError("missing or wrong token: send Authorization: Bearer <token>")
        return
    if not is_loopback(client_host(request, access.trusted_proxies)):
        raise UnauthorizedError(
            f"changing state from beyond localhost needs a token: the operator sets "
            f"{access.token_setting()} and clients send Authorization: Bearer <token>"
        )


async def require_access(request: Request) -> None:
    """The dependency of every state-changing route; the app's settings are the rule's."""
    access: Any = getattr(request.app.state, "access", None)
    if not isinstance(access, ControlAccess):
        raise UnauthorizedError("this service has no access settings: state changes are off")
    check_access(request, access)


ControlDep = Depends(require_access)
"""``dependencies=[ControlDep]`` on a route, with ``problem_responses(401)``."""


def served_routes(app: FastAPI) -> list[tuple[str, str, Dependant | None]]:
    """(method, path, dependant) of every route `app` serves, HEAD left out: included
    routers flattened (FastAPI keeps them lazily, so ``app.routes`` alone misses their
    routes); the dependant is None for plain Starlette routes and mounts (GET)."""
    found = []
    for context in iter_route_contexts(app.routes):
        dependant = getattr(context, "dependant", None)
        for method in sorted((context.methods or {"GET"}) - {"HEAD"}):
            found.append((method, context.path or "", dependant))
    return found


def is_guarded(dependant: Dependant | None) -> bool:
    """Whether a route's dependant, or any dependency of it, has the rule (``require_access``)."""
    return dependant is not None and any(
        dependency.call is require_access or is_guarded(dependency)
        for dependency in dependant.dependencies
    )


def open_routes(app: FastAPI) -> list[str]:
    """The routes of `app` ("METHOD path", sorted) that answer without a token: the shared
    routes (``SHARED_OPEN_ROUTES``) and every route without the rule (GET routes only, where
    the rule holds; a test checks that it does)."""
    return sorted(
        f"{method} {path}"
        for method, path, dependant in served_routes(app)
        if not is_guarded(dependant)
    )
