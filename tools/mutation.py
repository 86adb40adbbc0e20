"""Mutation testing with cosmic-ray, on a copy of the working tree (docs/mutation.md).

Usage (the tox env ``mutation`` runs it): ``python tools/mutation.py --work DIR [NAME…]``. Each
NAME is a config ``tools/mutation/NAME.toml`` (default: all of them): one module and the few fast
tests that must kill its mutants. The tracked and untracked (not ignored) files of the working
tree are copied to ``DIR/tree`` and installed editable from there, so cosmic-ray mutates the copy
in place while the working tree stays untouched. Mutants inside annotations (never evaluated) are
skipped as equivalent. Sessions are kept as ``DIR/NAME.sqlite``: ``--resume`` continues an
interrupted one, ``--retest-survivors`` runs its survivors again (after tests were added: the
test command must still include the tests that killed the others). The summary and every
survivor with its diff are printed and written to ``DIR/summary.md``.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tools" / "mutation"


@dataclass
class Tally:
    """The outcome of one module's session."""

    name: str
    module: str = ""
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    skipped: int = 0
    pending: int = 0
    survivors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Mutants that ran: incompetent ones never did (cosmic-ray could not apply them)."""
        return self.killed + self.survived

    @property
    def score(self) -> float:
        """Killed of the mutants that ran, in per cent."""
        return 100.0 * self.killed / self.total if self.total else 100.0


def copy_tree(tree: Path) -> None:
    """The working tree's files (tracked and untracked, not ignored) copied to ``tree``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode()
    if tree.exists():
        shutil.rmtree(tree)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)


def install(tree: Path) -> None:
    """``waypost`` imported from the copy (its dependencies are the env's already)."""
    built = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                            "--no-build-isolation", "--editable", str(tree)],
                           capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"installing the copy failed:\n{built.stdout}{built.stderr}")
    where = subprocess.run([sys.executable, "-c", "import waypost.reference; "
                            "print(waypost.reference.__file__)"],
                           check=True, capture_output=True, text=True, cwd="/").stdout
    if not Path(where.strip()).is_relative_to(tree):
        raise SystemExit(f"waypost imports from {where.strip()}, not from the copy {tree}")


Span = tuple[tuple[int, int], tuple[int, int]]


def annotation_spans(module: Path) -> list[Span]:
    """Where the module's annotations are, as (line, column) pairs like parso's (columns in
    characters); none unless ``from __future__ import annotations`` keeps them unevaluated."""
    source = module.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names)
                    for node in tree.body)
    if not postponed:
        return []

    def column(line: int, offset: int) -> int:
        return len(lines[line - 1].encode()[:offset].decode())

    spans = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for expr in filter(None, found):
            assert expr.end_lineno is not None
            assert expr.end_col_offset is not None
            spans.append(((expr.lineno, column(expr.lineno, expr.col_offset)),
                          (expr.end_lineno, column(expr.end_lineno, expr.end_col_offset))))
    return spans


def skip_annotations(session: Path, tree: Path) -> None:
    """Mark mutants inside annotations skipped: never evaluated, they are equivalent."""
    with use_db(str(session), WorkDB.Mode.open) as db:
        spans: dict[Path, list[Span]] = {}
        for item in db.pending_work_items:
            mutation = item.mutations[0]
            path = tree / mutation.module_path
            if path not in spans:
                spans[path] = annotation_spans(path)
            if any(start <= mutation.start_pos and mutation.end_pos <= end
                   for start, end in spans[path]):
                db.set_result(item.job_id, WorkResult(
                    worker_outcome=WorkerOutcome.SKIPPED,
                    output="in an annotation (never evaluated): equivalent"))


def forget_survivors(session: Path) -> None:
    """Make the survivors pending again (to run them against tests added since)."""
    with sqlite3.connect(session) as db:
        db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'")


def run_session(name: str, tree: Path, work: Path, *, resume: bool, retest: bool,
                dry: bool) -> None:
    """Init (unless resuming) and filter; unless ``dry``, check the unmutated baseline and
    execute what is pending (with ``retest``, the survivors too)."""
    config = str(tree / "tools" / "mutation" / f"{name}.toml")
    session = work / f"{name}.sqlite"

    def tool(*command: str) -> None:
        subprocess.run(list(command), cwd=tree, check=True)

    if not ((resume or retest) and session.exists()):
        tool("cosmic-ray", "init", "--force", config, str(session))
    elif retest:
        forget_survivors(session)
    tool("cr-filter-operators", str(session), config)
    skip_annotations(session, tree)
    if dry:
        return
    tool("cosmic-ray", "baseline", config)
    tool("cosmic-ray", "exec", config, str(session))


def tally(name: str, session: Path) -> Tally:
    """Count a session's outcomes; each survivor as its place and diff."""
    config = tomllib.loads((CONFIGS / f"{name}.toml").read_text(encoding="utf-8"))["cosmic-ray"]
    counted = Tally(name, config["module-path"])
    excluded = config.get("filters", {}).get("operators-filter", {}).get("exclude-operators", [])
    # the same test as cr-filter-operators, so results run before a pattern was added count as
    # skipped too
    exclude = re.compile("|".join(f"(?:{pattern})" for pattern in excluded)) if excluded else None
    with use_db(str(session), WorkDB.Mode.open) as db:
        counted.pending = db.num_work_items - db.num_results
        for item, result in sorted(db.completed_work_items,
                                   key=lambda done: done[0].mutations[0].start_pos):
            mutation = item.mutations[0]
            if result.worker_outcome == WorkerOutcome.SKIPPED or (
                    exclude is not None and exclude.match(mutation.operator_name)):
                counted.skipped += 1
            elif result.test_outcome == TestOutcome.SURVIVED:
                counted.survived += 1
                counted.survivors.append(
                    f"{mutation.module_path}:{mutation.start_pos[0]} {mutation.operator_name} "
                    f"(occurrence {mutation.occurrence})\n{result.diff or ''}")
            elif result.test_outcome == TestOutcome.KILLED:
                counted.killed += 1
            else:
                counted.incompetent += 1
    return counted


def summary(tallies: list[Tally]) -> str:
    lines = ["| module | killed | survived | run | killed % | not applied | skipped | pending |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for t in tallies:
        lines.append(f"| {t.module} | {t.killed} | {t.survived} | {t.total} | {t.score:.1f} "
                     f"| {t.incompetent} | {t.skipped} | {t.pending} |")
    for t in tallies:
        for survivor in t.survivors:
            lines += ["", "```diff", f"# {survivor.rstrip()}", "```"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the copy and sessions go")
    parser.add_argument("--resume", action="store_true", help="continue existing sessions")
    parser.add_argument("--retest-survivors", action="store_true",
                        help="continue existing sessions, running their survivors again")
    parser.add_argument("--report", action="store_true", help="only summarise the sessions")
    parser.add_argument("--dry-run", action="store_true",
                        help="create and filter the sessions, run nothing (see what is pending)")
    parser.add_argument("names", nargs="*", help="configs of tools/mutation/ (default: all)")
    args = parser.parse_args()
    names = args.names or sorted(path.stem for path in CONFIGS.glob("*.toml"))
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    # pytest without the plugins the chosen tests never use (playwright, xdist…): seconds saved
    # on each of hundreds of runs; no byte-code caches, which a mutant could outlive.
    os.environ.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    if not args.report:
        copy_tree(tree)
        install(tree)
        for name in names:
            run_session(name, tree, work, resume=args.resume, retest=args.retest_survivors,
                        dry=args.dry_run)
    tallies = [tally(name, work / f"{name}.sqlite") for name in names
               if (work / f"{name}.sqlite").exists()]
    text = summary(tallies)
    (work / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
