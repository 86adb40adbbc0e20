"""An argument parser whose errors name the flag at fault: ``waypost conformance --url http://…``
says "unknown option --url: use --target", and ``--profle quick`` says "did you mean --profile?",
where plain argparse would blame the value that followed ("invalid choice: 'http://…'")."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, NoReturn

#: Flags users bring from other tools, and the flag they mean here.
INSTEAD = {"--url": "--target", "--server-url": "--target", "--base-url": "--target",
           "--token": "--admin-token", "--runs": "--seed"}


class HintingParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` that remembers the words it was given (its sub-command
    parsers are of the same class), so that an error can point at an unknown flag."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.words: list[str] = []

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        given = args[0] if args else kwargs.get("args")
        self.words = list(given) if given is not None else sys.argv[1:]
        return super().parse_known_args(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        unknown = self.unknown_flag()
        if unknown is not None:
            message = unknown
        super().error(message)

    def unknown_flag(self) -> str | None:
        """What to say of the first ``--flag`` among the words that no option of this parser
        (or of the sub-command they name) takes, if there is one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = next((action.choices[w] for w in self.words if w in action.choices),
                              None)
                if isinstance(chosen, HintingParser):
                    return chosen.unknown_flag()
        known = set(self._option_string_actions)
        for word in self.words:
            if word == "--":
                return None
            if not word.startswith("--"):
                continue
            flag = word.split("=", 1)[0]
            if flag in known:
                continue
            if flag in INSTEAD and INSTEAD[flag] in known:
                return f"unknown option {flag}: use {INSTEAD[flag]}"
            close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.75)
            hint = f": did you mean {close[0]}?" if close else f" (see {self.prog} --help)"
            return f"unknown option {flag}{hint}"
        return None
