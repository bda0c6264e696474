"""The API's operations, one module per resource: each declares its :class:`Endpoint` values
(method, path, request and answer models, handler), and :data:`ENDPOINTS` is all of them, in the
order the document lists them. A handler is a plain function over
:class:`~harness.daemon.services.Services`."""

from harness.daemon.endpoint import Endpoint
from harness.daemon.routes import (
    calls,
    forecasts,
    ledger,
    predictions,
    proxy,
    runs,
    service,
    tokens,
    witness,
)

__all__ = ["ENDPOINTS"]

ENDPOINTS: tuple[Endpoint, ...] = (
    *service.ENDPOINTS,
    *tokens.ENDPOINTS,
    *runs.ENDPOINTS,
    *predictions.ENDPOINTS,
    *forecasts.ENDPOINTS,
    *calls.ENDPOINTS,
    *ledger.ENDPOINTS,
    *proxy.ENDPOINTS,
    *witness.ENDPOINTS,
)
"""Every operation of the API (each has its row in :data:`harness.daemon.access.ACCESS`)."""
