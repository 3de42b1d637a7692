"""What tests, evals and benchmarks share: the scripted Responses-API model."""
