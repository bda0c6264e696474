"""The base of the profile's models (:mod:`reports.model`): a JSON number kept as given, an
interval, :func:`json_ready` and :class:`Frozen`, the frozen model that keeps its keys in the
order they were given; and the two figures every section uses, :class:`Estimate` and
:class:`Available`."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Self

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_serializer,
    model_validator,
)

__all__ = ["Available", "Estimate", "Frozen", "Interval", "Number", "json_ready"]


def _number_as_given(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """An integer stays an integer: ``"n_effective": 12`` is written back as ``12``, not
    ``12.0`` (the schema's type is ``number`` either way)."""
    return value if type(value) is int else handler(value)


def _number_as_is(value: Any) -> Any:
    return value


Number = Annotated[float, WrapValidator(_number_as_given), PlainSerializer(_number_as_is)]
"""A JSON number: a float, or an int kept as given (and written as given)."""

Interval = tuple[Number | None, Number | None]
"""A 95% interval; an end is null when it is open (beyond the tested range)."""


def json_ready(v: Any) -> Any:
    """JSON-ready: numpy scalars to Python, NaN/inf to None, tuples to lists (models as
    they are)."""
    if isinstance(v, dict):
        return {str(k): json_ready(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_ready(x) for x in v]
    if isinstance(v, np.ndarray):
        return [json_ready(x) for x in v.tolist()]
    if isinstance(v, np.bool_ | bool):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


class Frozen(BaseModel):
    """A frozen model whose JSON keeps its keys in the order they were given.

    Extra keys are kept (a section may grow within /2) and the model cannot be changed. The
    JSON form (:meth:`RunProfile.to_json`) writes the keys that were given, in the order they
    were given, so that a profile reads the same whichever way it was built: parsing a
    profile and writing it again gives the same bytes."""

    model_config = ConfigDict(frozen=True, extra="allow")
    _keys: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, Frozen):
            model._keys = tuple(data)
        return model

    @classmethod
    def of(cls, data: Any) -> Self:
        """Parse computed figures (numpy scalars, NaN) as JSON would hold them
        (:func:`json_ready`); raises :class:`pydantic.ValidationError` when they do not fit."""
        return cls.model_validate(json_ready(data))

    @model_serializer(mode="wrap")
    def _in_given_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if not self._keys or not isinstance(out, dict):
            return out
        first = {k: out[k] for k in self._keys if k in out}
        return first | {k: v for k, v in out.items() if k not in first}


class Estimate(Frozen):
    """A figure with the interval its design allows, or the reason it has none."""

    value: Number | None = Field(default=None, description="the point estimate; null when n = 0")
    k: int | None = Field(default=None, description="successes, for a proportion")
    n: int | None = Field(default=None, description="trials (items) the figure counts")
    ci: Interval | None = Field(default=None, description="95% interval; null when not estimable")
    interval: str | None = Field(
        default=None, description="the interval's method (intervals.kinds)"
    )
    status: Literal["estimated", "not_estimable"] | None = None
    reason: str | None = Field(
        default=None, description="why there is no interval, when there is none"
    )
    n_clusters: int | None = None
    n_effective: Number | None = None
    definition: str | None = None


class Available(Frozen):
    """A section the run may not allow: ``available`` false, with the ``reason``, when not."""

    available: bool | None = None
    reason: str | None = None
