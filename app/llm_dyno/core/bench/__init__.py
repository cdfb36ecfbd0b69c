"""Benchmarks: suites, the streaming client and runner, statistics, reports, sweeps and A/B."""
