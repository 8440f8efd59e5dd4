"""Analysis scripts: accuracy sweeps and measurements (not part of the package)."""
