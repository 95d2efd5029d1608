"""Request field types that take JSON types as JSON Schema does.

pydantic's lax mode takes ``"7"`` and ``true`` for the integer 7 and 1; a spec that says
``integer`` must refuse them (422 naming the field). Strict mode would also refuse ``7.0``,
which JSON Schema counts as an integer. These types sit between: numbers only.
Constraints go before the validator, so that pydantic writes them into the schema.

>>> from pydantic import TypeAdapter
>>> TypeAdapter(JsonInt).validate_python(7.0)
7
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field


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
