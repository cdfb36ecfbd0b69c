"""The live telemetry dashboard (plots of a launched or attached server)."""

from llm_dyno.ui.dashboard.view import Dashboard

__all__ = ["Dashboard"]
