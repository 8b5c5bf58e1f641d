"""Fixtures of the informer unit tests."""

from __future__ import annotations

import pytest

from manager.apimachinery.resources import PODS
from manager.client.config import RestConfig
from manager.client.rest import ApiClient
from manager.informers import SharedInformer


@pytest.fixture
def informer() -> SharedInformer:
    """A pod informer fed by hand (replace / apply, as the reflector does); its client points nowhere."""
    return SharedInformer(ApiClient(RestConfig(host="http://127.0.0.1:1")), PODS)
