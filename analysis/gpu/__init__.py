"""The GPU measurements: kernels on a device, their SASS and table reads
without one, and the generators of the pages and the per-device choice made
from them (``analysis/on_gpu.sh`` runs the device steps)."""
