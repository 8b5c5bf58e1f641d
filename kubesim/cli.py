"""`kubesim` console script: serve an embedded Kubernetes API server emulator until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

import structlog

from kubesim.auth.authn import TokenFileError
from kubesim.auth.ownerrefs import PLUGINS, check_plugins
from kubesim.auth.service import ALWAYS_ALLOW, MODES
from kubesim.server import audit, inline
from kubesim.sim import KubeSim
from kubesim.storage.durable import DataDirError

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class _OneLineParser(argparse.ArgumentParser):
    """Bad flags exit 2 with a single line on stderr (argparse would print the whole usage block)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return number


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return number


def _go_bool(value: str) -> bool:
    if value.lower() in ("1", "t", "true"):
        return True
    if value.lower() in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {value}")


def _admission_plugins(value: str) -> list[str]:
    try:
        return list(check_plugins(n.strip() for n in value.split(",") if n.strip()))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {value}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="kubesim",
        description="An embedded Kubernetes API server emulator with simulated nodes and kubelet.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=6443, help="port to listen on; 0 picks a free one")
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="write a kubeconfig for this server once it serves"
    )
    parser.add_argument(
        "--nodes", type=_non_negative_int, default=3, help="simulated Ready nodes (default 3)"
    )
    parser.add_argument(
        "--no-kubelet",
        dest="kubelet",
        action="store_false",
        help="no scheduler or kubelet: pods stay as written",
    )
    parser.add_argument(
        "--history-size", type=_positive_int, default=10000, help="watch events kept for resumption"
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="keep the cluster in DIR (SQLite) and continue from it on the next start; default: memory only",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed for names, uids and faults")
    parser.add_argument(
        "--audit-log-path", metavar="FILE", help="append one JSON line per mutating request to FILE"
    )
    parser.add_argument(
        "--authorization-mode",
        choices=MODES,
        default=ALWAYS_ALLOW,
        help="RBAC enforces the stored RBAC objects; AlwaysAllow (default) allows every request",
    )
    parser.add_argument(
        "--token-auth-file",
        metavar="PATH",
        help='bearer tokens, one per line: token,user,uid,"group1,group2"',
    )
    parser.add_argument(
        "--anonymous-auth",
        type=_go_bool,
        default=True,
        metavar="BOOL",
        help="in RBAC mode, serve requests without credentials as system:anonymous (default true)",
    )
    parser.add_argument(
        "--enable-admission-plugins",
        type=_admission_plugins,
        default=[],
        metavar="NAMES",
        help=f"comma-separated admission plugins to enable besides the built-in ones: {', '.join(PLUGINS)}",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a CA and certificate kubesim makes (the kubeconfig carries the CA)",
    )
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info", type=str.lower)
    return parser


def _configure_logging(level_name: str) -> None:
    level = getattr(logging, level_name.upper())
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    # aiohttp's access log would drown everything else at info.
    logging.getLogger("aiohttp.access").setLevel(max(level, logging.WARNING))
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


async def serve(args: argparse.Namespace) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    # The other flags are the KubeSim arguments of the same name.
    local = ("log_level", "kubeconfig", "audit_log_path")
    options = {name: value for name, value in vars(args).items() if name not in local}
    if args.audit_log_path:
        audit.enable(args.audit_log_path)
    async with KubeSim(**options, kubeconfig_path=args.kubeconfig) as sim:
        tune_gc_for_a_dedicated_server()
        if inline.wanted():
            inline.install(loop)  # a request runs on its connection's task: one task fewer per request
        sys.stdout.write(f"kubesim ready at {sim.url}\n")
        sys.stdout.flush()
        await stopping.wait()


def tune_gc_for_a_dedicated_server() -> None:
    """Keep the cyclic GC off the start-up heap and collect the young generation less often.

    Only for the standalone process (not `KubeSim` embedded in someone else's process): the loaded schemas and
    seed objects never die and the store's objects hold no reference cycles, so every walk of the collector
    over them is work that frees nothing (figure: docs/design/performance.md).
    """
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(20_000, second, third)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.log_level)
    try:
        asyncio.run(serve(args))
    except (OSError, DataDirError, TokenFileError) as exc:  # a port in use, an unusable --data-dir
        sys.stderr.write(f"kubesim: error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
