"""The CLI starts at once: a command imports only what it runs (the kit, the MCP SDK and the
server's stack load when their command runs), checked on the import graph, not on a clock."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from waypost.cli import EXTRA_OF, KNOWN_AS, LAZY_COMMANDS, main, parser
from waypost.conformance.kit_command import LAZY

#: A script's first lines that make it run as the base install does: every package an extra
#: brings (cli.EXTRA_OF) halts its import, as if not installed.
BASE_INSTALL = ("import sys\n"
                f"for name in {sorted(EXTRA_OF)!r}:\n"
                "    sys.modules[name] = None\n")

#: Packages that take a tenth of a second or more to import, and which command needs each.
HEAVY = ("hypothesis", "schemathesis", "mcp", "httpx", "uvicorn", "starlette", "jinja2")


def _imported(*argv: str) -> list[str]:
    """The heavy packages imported by building the parser ``waypost ARGV`` runs with and
    parsing ARGV (``--help`` included: argparse exits after printing it)."""
    script = (
        "import sys\n"
        "from waypost.cli import _command_in, parser\n"
        f"argv = {list(argv)!r}\n"
        "try:\n"
        "    parser(_command_in(argv), argv).parse_args(argv)\n"
        "except SystemExit:\n"
        "    pass\n"
        "import json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    imported: list[str] = json.loads(done.stdout.splitlines()[-1])
    return imported


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["serve", "--help"],
                                  ["gateway", "--help"], ["gc", "--help"],
                                  ["admin", "bootstrap", "--help"], ["bench", "--help"],
                                  ["bench", "send", "--help"]])
def test_commands_of_the_server_import_none_of_the_heavy_packages(argv: list[str]) -> None:
    assert _imported(*argv) == []


@pytest.mark.parametrize("argv", [["conformance", "--help"], ["conformance", "replay", "--help"],
                                  ["conformance", "crash-matrix", "--help"]])
def test_the_kits_command_line_imports_none_of_the_kit(argv: list[str]) -> None:
    assert _imported(*argv) == []


def _help_of(*argv: str, loaded: tuple[str, ...] = ()) -> str:
    """What ``waypost ARGV --help`` prints, its parser built as ``main`` builds it (with the
    lazy sub-commands ``loaded`` registered in full)."""
    words = [*argv, "--help"]
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        parser(words[0], [*words, *loaded]).parse_args(words)
    return out.getvalue()


def test_the_kits_lazy_sub_commands_are_listed_as_their_modules_register_them() -> None:
    """Each heavy sub-command is listed by name and help (kit_command.LAZY) as its module
    registers it when it runs: with any of them loaded, the listing is the same."""
    listing = _help_of("conformance")
    for name in LAZY:
        assert _help_of("conformance", loaded=(name,)) == listing
        assert _help_of("conformance", name).startswith(f"usage: waypost conformance {name}")


def test_only_the_sub_command_being_run_is_loaded() -> None:
    """A word of the command line that merely looks like a sub-command (a report file named
    ``load``) loads nothing: ``compare`` stays light."""
    assert _imported("conformance", "compare", "load", "fuzz", "--help") == []


@pytest.mark.parametrize("command", ["consumer", "mcp"])
def test_the_consumer_and_the_mcp_entry_load_only_their_http_client(command: str) -> None:
    assert _imported(command, "--help") == ["httpx"]


def test_the_lazy_commands_are_listed_as_in_the_full_interface() -> None:
    """Their names and help, written in cli.py, are those their modules register."""
    full = parser().format_help()
    assert parser("serve").format_help() == full
    assert all(f"    {name}" in full for name in LAZY_COMMANDS)


@pytest.mark.parametrize("argv", [["consumer", "init"], ["consumer", "list"], ["mcp"]])
def test_the_servers_address_is_url_with_server_a_hidden_alias(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """One name for one flag (``admin bootstrap``, the consumer and the MCP entry alike)."""
    command = parser(argv[0])
    with pytest.raises(SystemExit):
        command.parse_args([*argv, "--help"])
    shown = capsys.readouterr().out
    assert "--url URL" in shown
    assert "--server" not in shown
    for flag in ("--url", "--server"):
        parsed = command.parse_args([*argv, flag, "http://127.0.0.1:9"])
        assert parsed.server == "http://127.0.0.1:9"


def test_mcp_config_prints_the_clients_entry_with_absolute_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WAYPOST_TOKEN", "tok_secret.never-printed")
    assert main(["mcp", "config", "--url", "http://127.0.0.1:8787", "--db", "alice.db",
                 "--name", "alice"]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["alice"]
    assert Path(entry["command"]).is_absolute()
    assert Path(entry["command"]).exists()
    assert entry["args"] == ["mcp", "--url", "http://127.0.0.1:8787", "--db",
                             str(tmp_path.resolve() / "alice.db")]
    assert entry["env"] == {"WAYPOST_TOKEN": "<the agent's token>"}
    assert main(["mcp", "config", "--url", "http://x.test", "--token-file", "a.token"]) == 0
    assert "secret" not in (printed := capsys.readouterr().out)
    assert str(tmp_path.resolve() / "a.token") in printed
    serving = parser("mcp").parse_args(["mcp", "--url", "http://127.0.0.1:8787"])
    assert (serving.mcp_command, serving.server) == (None, "http://127.0.0.1:8787")


@pytest.mark.parametrize(("argv", "extra"), [
    (["conformance", "--target", "sqlite"], "kit"),
    (["conformance", "replay", "x.json"], "kit"),
    (["bench", "kit"], "kit"),
    (["mcp", "--url", "http://127.0.0.1:9", "--db", "agent.db"], "mcp"),
])
def test_a_command_whose_extra_is_missing_names_the_extra_in_one_line(
        argv: list[str], extra: str, tmp_path: Path) -> None:
    """As the base install (``pip install waypost``) runs them: the kit's and the MCP SDK's
    packages are absent, and the command says which extra brings them, creating nothing."""
    script = BASE_INSTALL + f"from waypost.cli import main\nraise SystemExit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"waypost {argv[0]}")
    assert line.endswith(f"in the project's checkout, pip install '.[{extra}]'")
    assert f"needs {KNOWN_AS[extra]}," in line  # as the user knows it, never "mcp_types"
    assert list(tmp_path.iterdir()) == []


def test_an_mcp_config_printed_without_the_sdk_says_what_to_install(tmp_path: Path) -> None:
    argv = ["mcp", "config", "--url", "http://127.0.0.1:9", "--db", "agent.db"]
    script = BASE_INSTALL + f"from waypost.cli import main\nraise SystemExit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
    assert "pip install '.[mcp]' first" in done.stderr


@pytest.mark.parametrize("module", ["send", "load", "publish", "slow", "d1", "floor", "wire",
                                    "fill", "command"])
def test_the_benchmarks_of_the_base_install_need_no_extra(module: str) -> None:
    """Every ``waypost bench`` but ``kit`` runs on the base install: its module loads with
    the kit's and the MCP SDK's packages absent."""
    script = BASE_INSTALL + f"import waypost.bench.{module}\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
