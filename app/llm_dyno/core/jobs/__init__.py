"""Jobs: the one seam between the core and the front ends.

Every user action that talks to a server (launch, watch, bench, sweep, A/B, diagnose) is a job: a pure
``prepare_*`` that resolves, once, everything the job needs (the endpoint with its API-key reference,
the GPUs and how to read them, the suite checked against the profile, where results go) or refuses
with a clear error before anything runs; and a ``run`` that emits typed events and stores its own
record as it goes. The window and the CLI only prepare, run and show.

The tune job (``tune_spec``, ``tune_job``) and the sweep job (a tune of the power knob) live here with
the others; the workbench's parts they use (knobs, trials, records, analysis) stay in ``core.tune``.
"""
