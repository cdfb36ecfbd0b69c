"""Benchmarks: suites, the streaming client and runner, statistics, reports, sweeps and A/B, and the
decode roofline (what the GPU's bandwidth allows) that results and the diagnosis compare with."""
