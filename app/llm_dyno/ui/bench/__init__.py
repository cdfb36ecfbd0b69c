"""The Benchmark view: one-click suite runs, history, comparison and power-cap sweeps."""
