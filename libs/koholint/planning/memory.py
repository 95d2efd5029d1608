"""A planner session's memory: recent decisions and goals, bounded in count and size."""

from __future__ import annotations

from collections import deque
from typing import Literal

from pydantic import BaseModel, Field

Kind = Literal["decision", "result", "goal"]
MAX_ENTRY_CHARS = 200


class MemoryEntry(BaseModel):
    kind: Kind
    text: str = Field(max_length=MAX_ENTRY_CHARS)


class MemoryReport(BaseModel):
    """The memory as shown in a decision record."""

    items: int
    chars: int
    max_items: int
    max_chars: int
    recent: list[MemoryEntry]


class SessionMemory:
    """Keeps the newest entries while both `max_items` and `max_chars` hold."""

    def __init__(self, max_items: int = 16, max_chars: int = 2000) -> None:
        if max_items < 1 or max_chars < MAX_ENTRY_CHARS:
            raise ValueError(f"max_items >= 1 and max_chars >= {MAX_ENTRY_CHARS} are required")
        self.max_items, self.max_chars = max_items, max_chars
        self._entries: deque[MemoryEntry] = deque()
        self._chars = 0

    def add(self, kind: Kind, text: str) -> None:
        entry = MemoryEntry(kind=kind, text=text[:MAX_ENTRY_CHARS])
        self._entries.append(entry)
        self._chars += len(entry.text)
        while len(self._entries) > self.max_items or self._chars > self.max_chars:
            self._chars -= len(self._entries.popleft().text)

    def recent(self, count: int = 6) -> list[MemoryEntry]:
        return list(self._entries)[-count:]

    def goal(self) -> str | None:
        return next((e.text for e in reversed(self._entries) if e.kind == "goal"), None)

    def report(self) -> MemoryReport:
        return MemoryReport(
            items=len(self._entries), chars=self._chars, max_items=self.max_items,
            max_chars=self.max_chars, recent=self.recent(),
        )  # fmt: skip

    def prompt_lines(self, count: int = 6) -> str:
        return "\n".join(f"- {e.kind}: {e.text}" for e in self.recent(count)) or "- (nothing yet)"
