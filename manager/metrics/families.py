"""Labelled counters and histograms counted in plain attributes and turned into Prometheus metric families
at scrape time: for series that move on every sync or event of a hot path.

prometheus_client's labelled children take a lock on every update; here an update is an addition (and, for
a histogram, one bisect: `FastHistogram`). A collector gathers the families and is registered like any other
(`REGISTRY.register(collector)`); a series appears once something was counted in it, as with
prometheus_client. Updates and scrapes run on the one event loop, so nothing is locked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from manager.metrics.fasthistogram import FastHistogram

SeriesT = TypeVar("SeriesT")
FamilyT = TypeVar("FamilyT", bound="_Family[Any]")


class CounterSeries:
    """One labelled counter series."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount


class _Family(Generic[SeriesT]):
    """A labelled family: its series by label values, created on first use."""

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.label_names = labels
        self.children: dict[tuple[str, ...], SeriesT] = {}

    def labels(self, *values: str) -> SeriesT:
        child = self.children.get(values)
        if child is None:
            if len(values) != len(self.label_names):
                raise ValueError(f"{self.name}: expected labels {self.label_names}, got {values}")
            child = self._new_series()
            self.children[values] = child
        return child

    def _new_series(self) -> SeriesT:
        raise NotImplementedError

    def family(self) -> Metric:
        """The family as Prometheus exposes it now."""
        raise NotImplementedError


class ScrapeTimeCounter(_Family[CounterSeries]):
    """A labelled counter: `labels(...).inc(amount)`."""

    def _new_series(self) -> CounterSeries:
        return CounterSeries()

    def family(self) -> Metric:
        counter = CounterMetricFamily(self.name, self.documentation, labels=self.label_names)
        for values, series in list(self.children.items()):
            counter.add_metric(list(values), series.value)
        return counter


class ScrapeTimeHistogram(_Family[FastHistogram]):
    """A labelled histogram with fixed bucket bounds: `labels(...).observe(value)`."""

    def __init__(self, name: str, documentation: str, labels: list[str], buckets: tuple[float, ...]) -> None:
        super().__init__(name, documentation, labels)
        self.buckets = buckets

    def _new_series(self) -> FastHistogram:
        return FastHistogram(self.buckets)

    def family(self) -> Metric:
        histogram = HistogramMetricFamily(self.name, self.documentation, labels=self.label_names)
        for values, series in list(self.children.items()):
            histogram.add_metric(list(values), series.cumulative(), series.sum)
        return histogram


class ScrapeTimeCollector(Collector):
    """The families of one component, collected together; register it with a prometheus_client registry."""

    def __init__(self) -> None:
        self.families: list[_Family[Any]] = []

    def add(self, family: FamilyT) -> FamilyT:
        self.families.append(family)
        return family

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.family()
