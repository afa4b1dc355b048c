"""How a live model is reached and asked: the endpoint the user named and the options of the live client.

Plain typed values with no behaviour, so the run spec (harness.matrix) and the adapters here share them without
either importing the other's machinery.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.choices import ResponseFormat
from harness.models.providers import PROVIDERS

DEFAULT_STOP_AFTER = 10  # see harness.models.dead_endpoint


class LiveOptions(BaseModel):
    """How a live model is asked: sampling, structured output, and the HTTP client's patience."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    response_format: ResponseFormat | None = None  # None: json_object for the local model, json_schema otherwise
    disable_thinking: bool = False
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1)  # room for a 15-step plan with arguments; a runaway string stops here
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0, le=20)
    backoff_s: float = Field(1.0, ge=0)
    provider: str = "auto"  # a profile of harness.models.providers, or auto (from the URL and /models)
    strict_schema: bool = False  # OpenAI strict structured outputs
    max_response_bytes: int | None = Field(None, ge=1024)  # None: the live client's default (4 MiB)
    # Runs in a row ending in the same endpoint error before the matrix stops (0: never); why 10: dead_endpoint.py.
    stop_after_failures: int = Field(DEFAULT_STOP_AFTER, ge=0)
    # Earlier recordings that answer what they hold, the first holding a request first, so only the misses are asked
    # (harness/models/record_through.py); empty: every request is asked
    record_through: tuple[Path, ...] = ()

    @field_validator("record_through", mode="before")
    @classmethod
    def _one_or_several(cls, value: object) -> object:
        """One folder (a manifest written before several were allowed) is a tuple of one."""
        return (value,) if isinstance(value, (str, Path)) else value

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value != "auto" and value not in PROVIDERS:
            raise ValueError(f"must be auto or one of {', '.join(PROVIDERS)}")
        return value


class Endpoint(BaseModel):
    """An OpenAI-compatible endpoint the user named (LLM_API_URL, LLM_MODEL, LLM_API_KEY); the key is never shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    model: str
    api_key: str = Field("", repr=False)
