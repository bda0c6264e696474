"""Test doubles that run real servers on 127.0.0.1 (shipped so benchmarks and users can use them).

Names are imported lazily, so that ``python -m harness.testing.fake_openai`` runs the module once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.testing.fake_openai import (
        FAULT_KINDS,
        Answer,
        ChildServer,
        FakeConfig,
        FakeOpenAI,
        FakeOpenAIProcess,
        Faults,
        LoggedRequest,
        fixed_answer,
        marker_answer,
        request_key,
    )

__all__ = [
    "FAULT_KINDS",
    "Answer",
    "ChildServer",
    "FakeConfig",
    "FakeOpenAI",
    "FakeOpenAIProcess",
    "Faults",
    "LoggedRequest",
    "fixed_answer",
    "marker_answer",
    "request_key",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("harness.testing.fake_openai"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
