"""The backends' tests talk to the LLM client's scripted OpenAI-compatible server."""

from tests.libs.koholint.llm.conftest import scripted_llm

__all__ = ["scripted_llm"]
