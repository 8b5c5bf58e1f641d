"""The common write pipeline: namespace lifecycle, field validation, defaulting, validation, managedFields,
dry run and the store write — shared by create, update, patch and the subresources."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim.admission import defaults, gozero, lifecycle
from kubesim.api import views
from kubesim.api.context import AdmissionRequest, ApiContext, encode, from_view, json_response, to_view
from kubesim.api.request import Target, check_kind, decode_object, negotiate, read_body
from kubesim.merge import apply
from kubesim.registry import strategy
from kubesim.resources.types import GEN_CREATE, GEN_NONE, ResourceType
from kubesim.status import errors
from kubesim.storage.store import Entry, format_time
from kubesim.validation import decode_types, objects

JSON = dict[str, Any]
_VALIDATION_MODES = ("Strict", "Warn", "Ignore")


class Write:
    """Per-request write options and the warnings to send back."""

    def __init__(self, ctx: ApiContext, request: web.Request, target: Target) -> None:
        self.ctx = ctx
        self.request = request
        self.target = target
        self.rtype = rtype = target.rtype
        self.gvk = (rtype.group, rtype.version, rtype.kind)
        # served resource name for the defaulting/validation hooks: "pods", "jobs.batch"
        self.resource = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
        query = request.query
        dry = query.getall("dryRun", ()) if query and "dryRun" in query else ()
        self.dry_run = "All" in dry
        bad_dry = [v for v in dry if v != "All"]
        if bad_dry:
            raise errors.invalid(
                "DryRun",
                "",
                "",
                [
                    {
                        "reason": "FieldValueNotSupported",
                        "field": "dryRun",
                        "message": f'Unsupported value: "{bad_dry[0]}": supported values: "All"',
                    }
                ],
            )
        self.mode = (query.get("fieldValidation") if query else None) or "Warn"
        if self.mode not in _VALIDATION_MODES:
            raise errors.bad_request(f"fieldValidation must be one of Ignore, Strict, Warn, got {self.mode}")
        # negotiated before the write, as upstream: an Accept nothing satisfies is 406 and writes nothing
        self.accept = negotiate(request.headers.get("Accept"))
        manager = query.get("fieldManager") if query else None
        self.manager = manager or request.headers.get("User-Agent", "unknown").split("/", 1)[0]
        self.warnings: list[str] = []
        self._stored: Entry | None = None  # the store's entry of this write: its bytes are the response

    def now(self) -> str:
        """The managedFields time of this write, on the simulator's clock."""
        return format_time(self.ctx.clock())

    async def read_object(self) -> JSON:
        body = await read_body(self.request, self.ctx.max_body_bytes)
        content_type = self.request.headers.get("Content-Type", "")
        obj = decode_object(body, content_type, self.rtype.kind, self.rtype.version)
        check_kind(obj, self.rtype)
        return obj

    def check_fields(self, obj: JSON) -> None:
        """Wrong types → 400 (decoding); fieldValidation: Strict → 400, Warn → Warning header; unknown fields
        are dropped either way."""
        wrong = decode_types.type_error(self.gvk, obj)
        if wrong:
            raise errors.bad_request(
                f'{self.rtype.kind} in version "{self.rtype.version}" cannot be handled as a '
                f"{self.rtype.kind}: {decode_types.decode_message(wrong)}"
            )
        unknown = objects.unknown_fields(self.gvk, obj)
        if not unknown:
            return
        shown = [u.lstrip(".") for u in unknown]
        if self.mode == "Strict":
            detail = ", ".join(f'unknown field "{u}"' for u in shown)
            raise errors.bad_request(
                f'{self.rtype.kind} in version "{self.rtype.version}" cannot be handled as a '
                f"{self.rtype.kind}: strict decoding error: {detail}"
            )
        if self.mode == "Warn":
            self.warnings.extend(f'unknown field "{u}"' for u in shown)
        strategy.prune_paths(obj, list(unknown))

    def validate(self, obj: JSON, old: JSON | None, status: bool = False) -> None:
        if status and old is not None:
            causes = objects.validate_status(self.resource, obj, old)
        else:
            causes = objects.validate(self.resource, obj, old)
        if causes:
            name = str(obj.get("metadata", {}).get("name", ""))
            raise errors.invalid(self.rtype.kind, self.rtype.group, name, causes)

    def check_namespace(self, obj: JSON) -> None:
        if self.rtype.namespaced:
            name = lifecycle.admission_name(obj)
            lifecycle.check_create(self.ctx, self.rtype.plural, self.rtype.group, self.target.namespace, name)

    def respond(self, obj: JSON, status: int = 200) -> web.Response:
        stored = self._stored
        shaped = views.one(self.accept, self.rtype, obj, self.request.query) if self.accept.as_kind else None
        if shaped is not None:
            response = json_response(shaped, status)
        elif stored is not None and stored.obj is obj:
            response = json_response(encode(self.rtype, stored), status)  # no second JSON encoding
        else:
            response = json_response(to_view(self.rtype, obj), status)
        for warning in self.warnings:
            escaped = warning.replace('"', '\\"')
            response.headers.add("Warning", f'299 - "{escaped}"')
        return response

    # ---- the two store writes -----------------------------------------------------------------------------
    def create(self, obj: JSON, record_fields: bool = True) -> JSON:
        rtype = self.rtype
        metadata = obj.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        if rtype.namespaced:
            body_ns = metadata.get("namespace")
            if body_ns and body_ns != self.target.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = self.target.namespace
        else:
            metadata.pop("namespace", None)
        self.check_namespace(obj)  # admission: before name generation and validation
        if not metadata.get("name") and metadata.get("generateName"):
            namespace = self.target.namespace if rtype.namespaced else ""
            prefix = str(metadata["generateName"])
            metadata["name"] = self.ctx.generate_free_name(prefix, rtype.key, namespace)
        name = str(metadata.get("name") or "")
        if not name:
            raise errors.invalid_field(
                rtype.kind,
                rtype.group,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        if metadata.get("resourceVersion"):
            raise errors.internal("resourceVersion should not be set on objects to be created")
        self.check_fields(obj)
        strategy.check_micro_times(rtype, obj)
        strategy.prepare_create(rtype, obj, self.ctx.clock())
        gozero.omit_empty_meta_collections(obj)
        defaults.apply_defaults(self.resource, obj, admission=False)
        stored = from_view(rtype, obj)
        if record_fields:  # as upstream: after defaulting, before mutating admission
            apply.record_update(None, stored, self.manager, self.gvk, None, now=self.now())
        defaults.admit(self.resource, stored)  # pods only, whose stored form is the served one
        self.validate(obj, None)
        self._admit(name, None, stored, None)
        if self.dry_run:
            if self.ctx.store.entry(rtype.key, self.target.namespace, name) is not None:
                raise errors.already_exists(rtype.plural, rtype.group, name)
            metadata.setdefault("uid", "00000000-0000-0000-0000-000000000000")
            return stored
        result = self.ctx.store.create(rtype.key, stored)
        self._remember(name)
        return result

    def update(
        self, new: JSON, old: JSON, subresource: str | None = None, record_fields: bool = True
    ) -> JSON:
        """`new` in the served view; `old` as stored. Returns the stored result (maybe deleted)."""
        rtype = self.rtype
        name = str(old["metadata"]["name"])
        new_meta = new.setdefault("metadata", {})
        if not new_meta.get("resourceVersion") and rtype.crd is not None and subresource is None:
            raise errors.invalid_field(
                rtype.kind,
                rtype.group,
                name,
                "metadata.resourceVersion",
                "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update",
            )
        if subresource != "scale":  # status and finalize bodies decode into the type too; scale: its handler
            self.check_fields(new)
        strategy.check_micro_times(rtype, new)
        old_view = to_view(rtype, old)
        if subresource == "status":
            new = strategy.prepare_status_update(rtype, new, old_view)
        elif subresource == "finalize":
            new = strategy.prepare_finalize_update(new, old_view)
        else:
            if rtype.generation not in (GEN_NONE, GEN_CREATE):
                # The apiserver defaults the body before the strategy compares specs for
                # metadata.generation: re-sending the same spec without its defaults is no change.
                defaults.apply_defaults(self.resource, new, admission=False)
            strategy.prepare_update(rtype, new, old_view)
        gozero.omit_empty_meta_collections(new)
        defaults.apply_defaults(self.resource, new)
        self.validate(new, old_view, status=subresource == "status")
        stored = from_view(rtype, new)
        self._admit(name, subresource, stored, old)
        if record_fields:
            apply.record_update(old, stored, self.manager, self.gvk, subresource, now=self.now())
        if self.dry_run:
            current = self.ctx.store.entry(rtype.key, self.target.namespace, name)
            sent = stored["metadata"].get("resourceVersion")
            if current is not None and sent and sent != str(current.rv):
                raise errors.optimistic_lock(rtype.plural, rtype.group, name)
            return stored
        result = self.ctx.store.update(rtype.key, stored)
        self._remember(name)
        return result

    def _admit(self, name: str, subresource: str | None, obj: JSON, old: JSON | None) -> None:
        """The validating admission plugins (as upstream: after validation, dry run included)."""
        if self.ctx.admission:
            namespace = self.target.namespace if self.rtype.namespaced else ""
            self.ctx.admit(AdmissionRequest(self.request, self.rtype, namespace, name, subresource, obj, old))

    def _remember(self, name: str) -> None:
        self._stored = self.ctx.store.entry(self.rtype.key, self.target.namespace, name)


def gvk_of(rtype: ResourceType) -> tuple[str, str, str]:
    return (rtype.group, rtype.version, rtype.kind)
