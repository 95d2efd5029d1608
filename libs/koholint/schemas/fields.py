"""Request field types that take JSON types as JSON Schema does, and the one rule for an id
that becomes a path segment of another service's URL.

pydantic's lax mode takes ``"7"`` and ``true`` for the integer 7 and 1; a spec that says
``integer`` must refuse them (422 naming the field). Strict mode would also refuse ``7.0``,
which JSON Schema counts as an integer. These types sit between: numbers only.
Constraints go before the validator, so that pydantic writes them into the schema.

>>> from pydantic import TypeAdapter
>>> TypeAdapter(JsonInt).validate_python(7.0)
7
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints


def number_not_text(value: Any) -> Any:
    """JSON numbers only: a string or a boolean is refused."""
    if isinstance(value, str | bool):
        raise ValueError(f"expected a JSON number, got {type(value).__name__}")
    return value


JsonInt = Annotated[int, BeforeValidator(number_not_text)]
"""An integer as JSON Schema has it: 1 or 1.0, never "1" or true."""
JsonFloat = Annotated[float, BeforeValidator(number_not_text)]
MAX_SEED = 2**31 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED), BeforeValidator(number_not_text)]

PATH_ID = r"[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}"
"""An id that one service puts into a path of another's URL (a session, a run, an env): one
segment of letters, digits, '_', '.', ':' and '-', never starting with a dot. So never '.' or
'..', and nothing a URL decodes ('%') or splits on ('/', '\\', '?', '#'): the percent-encoded
forms of those arrive here decoded, or with their '%', and are refused alike."""
PATH_ID_PATTERN = rf"^{PATH_ID}$"
PATH_ID_RULE = (
    "1 to 128 letters, digits, '_', '.', ':' or '-', not starting with '.' "
    "(never '.', '..', '/', '%' or any other character a URL decodes or splits on)"
)
PathId = Annotated[str, StringConstraints(pattern=PATH_ID_PATTERN)]
"""A request field that the service forwards into another service's URL path."""


def path_segment(value: str, field: str = "id") -> str:
    """`value`, checked to be one safe path segment (``PATH_ID``); ValueError naming `field`.

    >>> path_segment("0a1b")
    '0a1b'
    >>> path_segment("..", "session_id")
    Traceback (most recent call last):
    ...
    ValueError: session_id '..' is not a safe path segment: use 1 to 128 letters, ...
    """
    if not isinstance(value, str) or re.fullmatch(PATH_ID_PATTERN, value) is None:
        raise ValueError(f"{field} {value!r} is not a safe path segment: use {PATH_ID_RULE}")
    return value
