"""``waypost bench``: every benchmark, each printing JSON with the machine and a baseline
measured in the same run. ``kit`` and ``publish`` measure over HTTP only, as the kit does (an
import-linter contract keeps them off the reference). ``command.py`` is the command line of the
load benchmarks; ``waypost.cli`` registers the others."""
