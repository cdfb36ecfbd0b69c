"""The CPU demo: vLLM for the CPU, a tiny model made offline and the ``cpu-demo`` profile that serves it.

This package imports only the standard library at its top level (and ``vllm_venv`` only that and
:mod:`llm_dyno.core.errors`), so that ``scripts/setup-vllm-cpu`` can run ``python3 -m
llm_dyno.core.demo.vllm_venv`` before the app's own venv exists.
"""
