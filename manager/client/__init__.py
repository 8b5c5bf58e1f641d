"""Raw-JSON Kubernetes API client: kubernetes-asyncio for config and auth, orjson for bodies, a lean
keep-alive pool for requests and a connection of the same make per watch."""

from manager.client.config import RestConfig, load_config
from manager.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    error_from_status,
)
from manager.client.http11 import ConnectError, Disconnected
from manager.client.ratelimit import TokenBucket
from manager.client.rest import ApiClient, PatchType, create_client
from manager.client.watch import WatchStream
from manager.client.writegate import WriteGate, WriteRefused

__all__ = [
    "AlreadyExists",
    "ApiClient",
    "ApiError",
    "BadRequest",
    "Conflict",
    "ConnectError",
    "Disconnected",
    "Expired",
    "Forbidden",
    "Invalid",
    "NotFound",
    "PatchType",
    "RestConfig",
    "ServerError",
    "TokenBucket",
    "TooManyRequests",
    "Unauthorized",
    "WatchStream",
    "WriteGate",
    "WriteRefused",
    "create_client",
    "error_from_status",
    "load_config",
]
