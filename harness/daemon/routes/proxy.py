"""The query proxy: ``POST /proxy/{target}/v1/chat/completions`` (see :mod:`..proxy`). An agent
token calls it as its agent; the proxy reads the body itself, after it found the target."""

from __future__ import annotations

from pydantic import Field

from harness.daemon.endpoint import Answer, Call, Endpoint
from harness.daemon.models import Model
from harness.daemon.proxy import MAX_PREDICTION_ID, PREDICTION_HEADER, ChatCompletion
from harness.daemon.services import Services

__all__ = ["ENDPOINTS", "proxy_chat"]


class TargetPath(Model):
    target: str = Field(min_length=1)
    """A declared target's name."""


class PredictionHeader(Model):
    prediction: str | None = Field(
        None, alias="X-Mindledger-Prediction", max_length=MAX_PREDICTION_ID
    )
    """The id of the caller's prediction of this call's answer."""


assert PredictionHeader.model_fields["prediction"].alias == PREDICTION_HEADER


async def proxy_chat(services: Services, call: Call[TargetPath, None, None]) -> Answer:
    caller = call.caller.agent
    assert caller is not None  # the guard refuses operator tokens (access.ACCESS)
    return await services.proxy.handle(call.request, caller, call.path.target)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        "/proxy/{target}/v1/chat/completions",
        proxy_chat,
        "the query proxy: an OpenAI-compatible call to a declared target",
        path_params=TargetPath,
        headers=PredictionHeader,
        body=ChatCompletion,
        reads_body=True,
        errors=(403, 404, 409, 413, 428, 502),
        passes_through="the target's own answer, passed through",
    ),
)
