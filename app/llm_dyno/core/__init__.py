"""The Qt-free core: domain model and adapters to Docker, vLLM and NVML."""
