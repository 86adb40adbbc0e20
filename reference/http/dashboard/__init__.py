"""The operator dashboard (docs/dashboard.md): server-rendered pages under ``/dashboard/``,
served only with ``waypost serve --dashboard``."""
