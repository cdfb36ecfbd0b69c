"""The tuning workbench: trials of profile variants (flags, env, image, power cap, locked clocks),
each benchmarked with the same suite, interleaved, with the GPU restored afterwards, and analysed."""
