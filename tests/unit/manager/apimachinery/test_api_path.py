"""GroupVersionResource.api_path: the request paths, with names and namespaces percent-encoded as segments."""

from __future__ import annotations

import pytest

from manager import CONFIGMAPS, JOBS, NAMESPACES, GroupVersionResource

WIDGETS: GroupVersionResource = GroupVersionResource("example.com", "v1", "widgets", "Widget")


@pytest.mark.parametrize(
    ("resource", "args", "path"),
    [
        (CONFIGMAPS, (), "/api/v1/configmaps"),
        (CONFIGMAPS, ("ns",), "/api/v1/namespaces/ns/configmaps"),
        (CONFIGMAPS, ("ns", "a.b-c_d~e"), "/api/v1/namespaces/ns/configmaps/a.b-c_d~e"),
        (JOBS, ("ns", "pi", "status"), "/apis/batch/v1/namespaces/ns/jobs/pi/status"),
        (NAMESPACES, ("ignored", "kube-system"), "/api/v1/namespaces/kube-system"),
        (NAMESPACES, (None, "ns", "finalize"), "/api/v1/namespaces/ns/finalize"),
        (WIDGETS, ("", "w"), "/apis/example.com/v1/widgets/w"),
        # Anything else is percent-encoded, "/" included: a name never adds a path segment.
        (WIDGETS, ("n s", "a/b?c#d%e"), "/apis/example.com/v1/namespaces/n%20s/widgets/a%2Fb%3Fc%23d%25e"),
        (CONFIGMAPS, ("ns", "é"), "/api/v1/namespaces/ns/configmaps/%C3%A9"),
        (CONFIGMAPS, ("ns", ""), "/api/v1/namespaces/ns/configmaps/"),
    ],
)
def test_paths(resource: GroupVersionResource, args: tuple[str | None, ...], path: str) -> None:
    assert resource.api_path(*args) == path


def test_a_subresource_needs_a_name() -> None:
    with pytest.raises(ValueError, match="needs an object name"):
        CONFIGMAPS.api_path("ns", None, "status")
