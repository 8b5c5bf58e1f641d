"""Shared informers: reflector (list+watch), indexed cache, per-handler delivery, factory."""

from manager.informers.backoff import Backoff
from manager.informers.factory import InformerFactory
from manager.informers.handlers import (
    DeletedFinalStateUnknown,
    EventHandlerFuncs,
    ResourceEventHandler,
    final_object,
)
from manager.informers.informer import SharedInformer
from manager.informers.listener import HandlerRegistration
from manager.informers.reflector import Reflector
from manager.informers.store import (
    CONTROLLER_OWNER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexFunc,
    controller_owner_uid,
    object_key,
    split_key,
)
from manager.informers.transform import Transform, chain, project_metadata, strip_managed_fields

__all__ = [
    "CONTROLLER_OWNER_UID_INDEX",
    "NAMESPACE_INDEX",
    "Backoff",
    "DeletedFinalStateUnknown",
    "EventHandlerFuncs",
    "HandlerRegistration",
    "IndexFunc",
    "Indexer",
    "InformerFactory",
    "Reflector",
    "ResourceEventHandler",
    "SharedInformer",
    "Transform",
    "chain",
    "controller_owner_uid",
    "final_object",
    "object_key",
    "project_metadata",
    "split_key",
    "strip_managed_fields",
]
