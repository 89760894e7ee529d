"""Running untrusted Python code in a contained child process.

- `host.py`: the public entry (`run_python_tests`, `SandboxLimits`) and what is contained;
- `process.py`: starting, watching and stopping the child;
- `runner.py`, `isolation.py`, `guard.py`: run inside the child (stdlib only).
"""
