"""Command-line pieces the kit's commands share: the target with its admin token, and a
comma-separated subset of known names."""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable

TARGET_HELP = "sqlite (default), d1 or a base URL"


def add_target(parser: argparse.ArgumentParser, target_help: str = TARGET_HELP) -> None:
    """``--target`` and ``--admin-token`` (read by :func:`admin_token`)."""
    parser.add_argument("--target", default="sqlite", help=target_help)
    parser.add_argument("--admin-token", default=None,
                        help="admin token of a URL target (default: $WAYPOST_ADMIN_TOKEN)")


def admin_token(args: argparse.Namespace) -> str | None:
    """``--admin-token``, else ``$WAYPOST_ADMIN_TOKEN``."""
    token: str | None = args.admin_token or os.environ.get("WAYPOST_ADMIN_TOKEN")
    return token


def subset(text: str | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``a,b`` → the names chosen (all of ``known`` when none is given); an unknown name is a
    ``ValueError`` that names ``what`` and the known ones."""
    if not text:
        return known
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [part for part in chosen if part not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown {what} {unknown} (known: {', '.join(known)})")
    return chosen


def later(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A command's run that imports ``module`` only when it runs: the command line stays
    light, and ``--help`` loads none of it."""

    def run(args: argparse.Namespace) -> int:
        code: int = getattr(importlib.import_module(module), function)(args)
        return code
    return run
