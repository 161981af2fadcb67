"""The layout's promises, checked on the source: no import cycles, imports only downward, the
model and index libraries behind their one module, no environment reads below the edge, and
every RPC through the status mapping."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from registry.proto import registry_pb2
from registry.rpc.servicer import CapabilityRegistryServicer
from tests.support.layout import (
    MAX_MODULE_LINES,
    cycles,
    import_graph,
    module_name,
    oversized,
    source_files,
    within,
)

GRAPH = import_graph()
INDEXER_BASE = ("indexer.model", "indexer.naming", "indexer.errors", "indexer.documents")
# What each indexer sub-package may import of the project, besides itself.
INDEXER_ALLOWED = {
    "indexer.formats": INDEXER_BASE,
    "indexer.embedding": INDEXER_BASE,
    "indexer.retrieval": (*INDEXER_BASE, "indexer.embedding.protocol"),
    "indexer.evaluation": (*INDEXER_BASE, "indexer.retrieval"),
}


def test_there_are_no_import_cycles() -> None:
    assert cycles(GRAPH) == []


def test_every_hand_written_module_fits_one_responsibility() -> None:
    assert oversized() == [], f"split modules over {MAX_MODULE_LINES} lines by responsibility"


def test_the_indexer_never_imports_the_service_or_the_bridge() -> None:
    upward = {
        (module, target)
        for module, targets in GRAPH.items()
        if within(module, "indexer")
        for target in targets
        if not within(target, "indexer")
    }
    assert upward == set()


@pytest.mark.parametrize("package", sorted(INDEXER_ALLOWED))
def test_each_indexer_sub_package_imports_only_downward(package: str) -> None:
    allowed = (package, *INDEXER_ALLOWED[package])
    outside = {
        (module, target)
        for module, targets in GRAPH.items()
        if within(module, package)
        for target in targets
        if not within(target, *allowed)
    }
    assert outside == set()


def test_the_registry_never_imports_the_bridge_or_the_composition_root() -> None:
    """Package-level layering: the registry sits below the bridge and below `capreg`, which
    wires the two together."""
    upward = {
        (module, target)
        for module, targets in GRAPH.items()
        if within(module, "registry")
        for target in targets
        if within(target, "mcp_bridge", "capreg")
    }
    assert upward == set()


def test_nothing_in_the_packages_imports_the_benchmarks_or_the_tests() -> None:
    found = third_party_importers("bench") | third_party_importers("tests")
    assert found == set()


def test_the_bridge_reaches_the_registry_only_through_its_client() -> None:
    allowed = ("mcp_bridge", "registry.client", "registry.wire", "registry.proto")
    outside = {
        (module, target)
        for module, targets in GRAPH.items()
        if within(module, "mcp_bridge")
        for target in targets
        if not within(target, *allowed)
    }
    assert outside == set()


def test_the_tool_search_adapters_reach_the_registry_only_through_its_client() -> None:
    allowed = ("registry.integrations", "registry.client", "registry.wire", "registry.proto")
    outside = {
        (module, target)
        for module, targets in GRAPH.items()
        if within(module, "registry.integrations")
        for target in targets
        if not within(target, *allowed)
    }
    assert {m for m in GRAPH if within(m, "registry.integrations")} >= {
        "registry.integrations.anthropic",
        "registry.integrations.openai",
    }
    assert outside == set()


def test_only_the_edge_imports_the_cli_and_the_server() -> None:
    """The CLI composes everything; the server composes the core. Nothing below them
    reaches up to either."""
    for module, targets in GRAPH.items():
        if not within(module, "capreg.cli", "capreg.__main__"):
            assert not {t for t in targets if within(t, "capreg.cli")}, module
        if not within(module, "capreg.cli", "registry.rpc.server"):
            assert not {t for t in targets if within(t, "registry.rpc.server")}, module


def third_party_importers(library: str) -> set[str]:
    found = set()
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(within(name, library) for name in names):
                found.add(module_name(path))
    return found


@pytest.mark.parametrize(
    ("library", "owners"),
    [
        (
            "faiss",
            {"indexer.retrieval.vector_index", "indexer.retrieval.ivf", "indexer.retrieval.cores"},
        ),
        # The torch backend, and the encoder's fine-tuning (make train only).
        ("sentence_transformers", {"indexer.embedding.torch", "capreg.training.encoder"}),
        ("onnxruntime", {"indexer.embedding.onnx"}),
        # The one-off ONNX export, the query adapter's fit and the encoder's fine-tuning (make
        # train only: serving applies the fitted matrix with numpy).
        (
            "torch",
            {"indexer.embedding.onnx", "capreg.training.adapting", "capreg.training.encoder"},
        ),
        ("bm25s", {"indexer.retrieval.lexical"}),
        # The vendors' SDKs are test-only: the tool-search adapters emit plain payloads.
        ("anthropic", set()),
        ("openai", set()),
    ],
)
def test_each_heavy_library_is_imported_by_its_one_module(library: str, owners: set[str]) -> None:
    assert third_party_importers(library) == owners


# The two embedding backends switch the model libraries' hub access off before importing
# them: a write of those two switches, not configuration read from the environment.
HUB_SWITCHES = {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}


def environment_reads(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in HUB_SWITCHES
        ):
            allowed.add(id(node.func.value))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in ("environ", "getenv", "environb")
        and id(node) not in allowed
    ]


def test_no_library_module_reads_the_environment() -> None:
    # capreg.training.tuning: the command line of `python -m capreg.training.*` checks.
    edge = ("capreg.cli", "mcp_bridge.cli", "capreg.training.tuning")
    readers = {
        module_name(path): lines
        for path in source_files()
        if not within(module_name(path), *edge) and (lines := environment_reads(path))
    }
    assert readers == {}


RPCS = sorted(registry_pb2.DESCRIPTOR.services_by_name["CapabilityRegistry"].methods_by_name)


def test_the_service_has_rpcs_to_check() -> None:
    assert {"Search", "GetSchema", "RegisterCatalog", "DeleteCatalog", "ListCatalogs"} <= set(RPCS)


@pytest.mark.parametrize("rpc", RPCS)
def test_every_rpc_goes_through_the_status_mapping(rpc: str) -> None:
    method = CapabilityRegistryServicer.__dict__.get(rpc)
    assert method is not None, f"{rpc} is not implemented"
    # functools.wraps in registry.rpc.status.mapped leaves the handler under __wrapped__.
    assert getattr(method, "__wrapped__", None) is not None
    assert method.__module__ == "registry.rpc.servicer"
    assert method.__qualname__.endswith(rpc)
    assert method.__code__.co_filename.endswith("status.py")
