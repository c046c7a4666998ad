"""The request-level generation simulator, the engine online policies run on (docs/architecture.md,
"Online policies on the generation simulator"), and rollout length traces. One job a module:

* ``requests``: the request and record types, and the default round-robin assignment;
* ``engine``: the event core (continuous batching under the KV cache, jumping between events in
  closed form; runs policies);
* ``policy``: the policy API (what a policy observes, the actions it returns);
* ``reference``: the per-token reference stepper the tests hold the engine to;
* ``traces`` and ``lengths``: rollout length traces and length histograms;
* ``plot``: pictures of a simulated step.

The decode step the engine charges, and its affine pieces, are ``costmodels.decode``'s.
"""
