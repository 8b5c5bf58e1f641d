"""The one builder of metav1.Status bodies: errors, Success answers and the fault injector's all come from
`status_body`, so every Status kubesim sends has the same keys in the order kube-apiserver writes them."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def status_body(
    status: str,
    *,
    message: str | None = None,
    reason: str | None = None,
    details: JSON | None = None,
    code: int | None = None,
    metadata: JSON | None = None,
) -> JSON:
    """A metav1.Status: `status` is "Success" or "Failure"; the parts left as None are left out, as Go's
    omitempty does (the apimachinery Status type,
    `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go` `Status`)."""
    body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": dict(metadata or {}), "status": status}
    if message is not None:
        body["message"] = message
    if reason is not None:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    if code is not None:
        body["code"] = code
    return body
