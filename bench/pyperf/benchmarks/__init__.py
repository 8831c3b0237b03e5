"""pyperformance 1.14.0 benchmarks, each with a run(scale) function (see ../README.md)."""
