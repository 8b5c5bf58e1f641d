"""The controller_runtime_* metrics (controller-runtime's names).

The three series every reconcile writes (`controller_runtime_reconcile_total`, `..._reconcile_time_seconds`,
`..._active_workers`) are plain integers and a FastHistogram per controller name, turned into metric families
at scrape time, as the workqueue and REST client metrics are: prometheus_client's labelled children take a
lock per call, and a worker made five of those calls per reconcile. The error counters and the concurrency
gauge stay prometheus_client objects: they are off the hot path.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import Counter, Gauge
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from manager.metrics.fasthistogram import FastHistogram

RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9),
    *(1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0),
    *(15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
RESULTS = ("success", "error", "requeue", "requeue_after")


class ReconcileSeries:
    """The hot series of one controller name (shared by every controller instance of that name)."""

    __slots__ = ("active", "results", "time")

    def __init__(self) -> None:
        self.results = dict.fromkeys(RESULTS, 0)
        self.time = FastHistogram(RECONCILE_BUCKETS)
        self.active = 0


class ReconcileCollector(Collector):
    def __init__(self) -> None:
        self._series: dict[str, ReconcileSeries] = {}

    def series(self, controller: str) -> ReconcileSeries:
        """The controller's series, created (at 0, as controller-runtime pre-creates them) on first use."""
        series = self._series.get(controller)
        if series is None:
            series = self._series[controller] = ReconcileSeries()
        return series

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily | GaugeMetricFamily]:
        total = CounterMetricFamily(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            labels=["controller", "result"],
        )
        time = HistogramMetricFamily(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            labels=["controller"],
        )
        active = GaugeMetricFamily(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels=["controller"],
        )
        for name, series in sorted(self._series.items()):
            for result, count in series.results.items():
                total.add_metric([name, result], count)
            time.add_metric([name], series.time.cumulative(), series.time.sum)
            active.add_metric([name], series.active)
        yield from (total, time, active)


RECONCILES = ReconcileCollector()
REGISTRY.register(RECONCILES)

RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
TERMINAL_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics",
    "Total number of reconciliation panics per controller",
    ["controller"],
)
MAX_CONCURRENT = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
)


def init_metrics(controller: str) -> None:
    """Pre-create every series of the controller at 0, as controller-runtime does."""
    RECONCILES.series(controller)
    RECONCILE_ERRORS.labels(controller)
    TERMINAL_ERRORS.labels(controller)
    RECONCILE_PANICS.labels(controller)
