"""Shared informers: reflector (list+watch), indexed cache, per-handler delivery, factory."""

from manager.apimachinery.objects import object_key, split_key
from manager.informers.backoff import Backoff
from manager.informers.factory import InformerFactory
from manager.informers.handlers import (
    DeletedFinalStateUnknown,
    EventHandler,
    EventHandlerFuncs,
    final_object,
)
from manager.informers.informer import Selectors, SharedInformer
from manager.informers.listener import HandlerRegistration
from manager.informers.lister import Lister
from manager.informers.reflector import Reflector
from manager.informers.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexFunc,
    controller_uid_index,
    orphan_index_key,
)
from manager.informers.transform import Transform, chain, project_metadata, strip_managed_fields

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "Backoff",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventHandlerFuncs",
    "HandlerRegistration",
    "IndexFunc",
    "Indexer",
    "InformerFactory",
    "Lister",
    "Reflector",
    "Selectors",
    "SharedInformer",
    "Transform",
    "chain",
    "controller_uid_index",
    "final_object",
    "object_key",
    "orphan_index_key",
    "project_metadata",
    "split_key",
    "strip_managed_fields",
]
