"""Waypost/1: reference server (``waypost.reference``, ``waypost.adapters``) and conformance kit
(``waypost.properties``, ``waypost.conformance``). The two halves never import each other."""

__version__ = "0.1.0"
