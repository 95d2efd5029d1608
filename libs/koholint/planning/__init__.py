"""The planner's library: what it sees, when it takes over, what it asks language models,
and the macros it executes on any ``Emulator`` (a local GameBoy or an env-sim session).
Language models are reached through ``koholint.llm``; the wire contract is
``koholint.schemas.planner``.

Lives in the library, not in the planner service, because the trainer's hybrid wrapper runs
the same switch, backends and macros in-process.
"""
