"""An import-linter contract type for the root package (pyproject.toml's
``contract_types``).

A layers contract cannot name the root package ``gelu_numba`` as a layer:
a layer is a package with all its descendants, and the root contains every
layer.  Yet ``from gelu_numba import ndtr`` inside a target is an upward
import (the root publishes what the targets build).  This contract holds
the root module itself, without its descendants, to the top: only the
modules it names may import it.
"""

from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.imports import Module


class RootImportedFromTop(Contract):
    """Within the root package, only ``allowed_importers`` (and their
    descendants) import the root package module itself; importing its
    submodules is the layers contract's business, and the repository's tool
    folders, like users, import what they please of it."""

    root = fields.StringField()
    allowed_importers = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph, verbose):
        allowed = [m.name for m in self.allowed_importers]
        bad = []
        for importer in sorted(graph.find_modules_that_directly_import(self.root)):
            if not importer.startswith(self.root + ".") or any(
                    importer == a or importer.startswith(a + ".") for a in allowed):
                continue
            details = graph.get_import_details(importer=importer, imported=self.root)
            lines = [f"{importer}:{d['line_number']} {d['line_contents']}" for d in details]
            bad.extend(lines or [importer])
        return ContractCheck(kept=not bad, metadata={"bad": bad})

    def render_broken_contract(self, check):
        from importlinter.application import output
        for line in check.metadata["bad"]:
            output.print_error(f"imports the root package {self.root}: {line}")
            output.new_line()


__all__ = ["RootImportedFromTop", "Module"]
