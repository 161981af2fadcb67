"""Generated gRPC code for capreg.v1 (see proto/generate.py)."""
