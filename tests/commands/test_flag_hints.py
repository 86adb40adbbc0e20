"""A wrong flag is named, with the flag meant: never blamed on the value after it."""

from __future__ import annotations

import pytest

from waypost.cli import main


@pytest.mark.parametrize(("argv", "said"), [
    (["conformance", "--url", "http://127.0.0.1:8787"], "unknown option --url: use --target"),
    (["conformance", "--profle", "quick"], "unknown option --profle: did you mean --profile?"),
    (["serve", "--prot", "9000"], "unknown option --prot: did you mean --port?"),
    (["consumer", "send", "--db", "a.db", "--too", "bob"],
     "unknown option --too: did you mean --to?"),
    (["conformance", "--frobnicate"], "unknown option --frobnicate (see waypost conformance"),
])
def test_an_unknown_flag_is_named_with_the_one_meant(argv: list[str], said: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert said in error
    assert "invalid choice" not in error
