"""LLM Dyno: a desktop control panel and dynamometer for serving LLMs locally with vLLM."""

__version__ = "0.1.0"
