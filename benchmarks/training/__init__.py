"""Self-Refine in a GRPO trainer, measured with the local 0.5B model: `make bench-training`.

`batching.py` times refining a batch's wrong samples through the graph against one
batched generate of the same requests (and one generate per request), and measures how
far the "refinement" training form is from the policy's own sampling; `steps.py` runs
the training example's steps with refine rollouts and with TRL's plain ones. `run.py`
runs both and writes `benchmarks/results/training-cpu.md`.
"""
