"""Where each labeled dataset folder comes from: repository, pinned commit, files and checksums."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

NOTICE = "NOTICE.md"
# The upstream path of every repository's licence; its local name says which licence it is.
_LICENCE_PATH = "LICENSE"


@dataclass(frozen=True, kw_only=True)
class UpstreamFile:
    """One file of a dataset folder: its name here, its path upstream, and what it must be."""

    name: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class UpstreamDataset:
    """A dataset folder as copied from one commit of one GitHub repository."""

    folder: str
    repository: str  # owner/name on GitHub
    commit: str
    licence: str
    files: tuple[UpstreamFile, ...]

    @property
    def licence_file(self) -> str:
        """The local name of the repository's LICENSE."""
        return next(f.name for f in self.files if f.path == _LICENCE_PATH)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


_APACHE_2 = "Apache License 2.0"
_APACHE_2_TEXT = UpstreamFile(
    name="LICENSE.apache-2.0.txt",
    path=_LICENCE_PATH,
    sha256="c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4",
    size=11_357,
)

# Pins and checksums were taken from the copies in ../shared/datasets, which are byte for byte
# the upstream files at these commits (their NOTICE.md files list the same paths).
_DATASETS = (
    UpstreamDataset(
        folder="livemcpbench",
        repository="icip-cas/LiveMCPBench",
        commit="a928e57d1ee7a25579b9a7036030faffff72d15b",
        licence=_APACHE_2,
        files=(
            UpstreamFile(
                name="tools.json",
                path="tools/LiveMCPTool/tools.json",
                sha256="93762d39002fe7546d79b4c8f0ff070678f5d218af29f83bfc57cd98ce8a6a59",
                size=1_133_936,
            ),
            UpstreamFile(
                name="all_annotations.json",
                path="annotated_data/all_annotations.json",
                sha256="0e8db4c5abf4eb0b666f4cc4c1b1bd5cd6b8741ade7abb0fbc51526ae8b058b8",
                size=82_022,
            ),
            _APACHE_2_TEXT,
        ),
    ),
    UpstreamDataset(
        folder="seal-tools",
        repository="fairyshine/Seal-Tools",
        commit="ce753ecd60ed08dd376984035de531ab8421f1c6",
        licence=_APACHE_2,
        files=(
            UpstreamFile(
                name="tool.jsonl",
                path="Seal-Tools_Dataset/tool.jsonl",
                sha256="35e34aaec1f0793c2b5a5dff734cb925837988f59ed0fe4f410d67f3d8375f5c",
                size=2_574_022,
            ),
            UpstreamFile(
                name="field.jsonl",
                path="Seal-Tools_Dataset/field.jsonl",
                sha256="ce6edd5e728a7dddfce8071f694837c48ac6ef4929ff983d87b7d0ead8f4fc02",
                size=142_395,
            ),
            UpstreamFile(
                name="dev.jsonl",
                path="Seal-Tools_Dataset/dev.jsonl",
                sha256="53da12c9fab27e47eba4767ae3625b53bb6474215c38e5033b1fe11e84efacf6",
                size=513_391,
            ),
            UpstreamFile(
                name="test_in_domain.jsonl",
                path="Seal-Tools_Dataset/test_in_domain.jsonl",
                sha256="330020288948e711846417c2fca9a5980ef0f1adc01ad74dc38cc9ff7142811f",
                size=511_226,
            ),
            UpstreamFile(
                name="test_out_domain.jsonl",
                path="Seal-Tools_Dataset/test_out_domain.jsonl",
                sha256="c2a86a3d3a5270f578e07f39a0973310cbcaec3b8d72166d7be38d21c9720be6",
                size=542_260,
            ),
            _APACHE_2_TEXT,
        ),
    ),
    UpstreamDataset(
        folder="stabletoolbench",
        repository="THUNLP-MT/StableToolBench",
        commit="aa4ed9f4737ad98bd706663f01d63623c3427812",
        licence=_APACHE_2,
        files=(
            UpstreamFile(
                name="G1_instruction.json",
                path="solvable_queries/test_instruction/G1_instruction.json",
                sha256="500aa0105ed451538448f6ea04f10661536b013f3e1a293840fe401688160e7c",
                size=1_199_749,
            ),
            UpstreamFile(
                name="G1_category.json",
                path="solvable_queries/test_instruction/G1_category.json",
                sha256="123cb9073c8b6e6473df91c8a51170277087e1c263eba2eb6077170edbe849c3",
                size=779_243,
            ),
            UpstreamFile(
                name="G1_tool.json",
                path="solvable_queries/test_instruction/G1_tool.json",
                sha256="05d0c180bbec9d060fd267cc79399bda05beddd0a6d0de68b5488926a9029a1a",
                size=1_266_963,
            ),
            UpstreamFile(
                name="G2_instruction.json",
                path="solvable_queries/test_instruction/G2_instruction.json",
                sha256="82d569cd0fc8fc742a15a3011fb5cd6a8b11e0a5b344c884602347439f43cad7",
                size=903_088,
            ),
            UpstreamFile(
                name="G2_category.json",
                path="solvable_queries/test_instruction/G2_category.json",
                sha256="71e18112f7940934f159d623b1c2b4740b1b4dc58a0b596c63b8151abbf8267e",
                size=865_527,
            ),
            UpstreamFile(
                name="G3_instruction.json",
                path="solvable_queries/test_instruction/G3_instruction.json",
                sha256="f923d1a9452646bd1a415b266117d90675d0f8fc04cf014db58d3cd78c25634f",
                size=858_650,
            ),
            _APACHE_2_TEXT,
        ),
    ),
    UpstreamDataset(
        folder="metatool",
        repository="HowieHwong/MetaTool",
        commit="35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb",
        licence="MIT",
        files=(
            UpstreamFile(
                name="all_clean_data.csv",
                path="dataset/data/all_clean_data.csv",
                sha256="cf2eb0474396677530931def51012da4e88f9f34f655332f04177b2054101baf",
                size=2_770_203,
            ),
            UpstreamFile(
                name="multi_tool_query_golden.json",
                path="dataset/data/multi_tool_query_golden.json",
                sha256="ef37d10a8cb5b41435d6ea3ae29819afdb8d6db0852268830e5ee77259507f51",
                size=112_358,
            ),
            UpstreamFile(
                name="plugin_des.json",
                path="dataset/plugin_des.json",
                sha256="c446ade5acfb8e16c477124250665021e63b11bf6cb232db04fc9ba6bed0389a",
                size=22_484,
            ),
            UpstreamFile(
                name="plugin_info.json",
                path="dataset/plugin_info.json",
                sha256="864bf25bd5494feca861acb98f69d260f212d9c098a2dc68b4b2ee357d6fb2f5",
                size=326_361,
            ),
            UpstreamFile(
                name="big_tool_des.json",
                path="dataset/big_tool_des.json",
                sha256="dcb6b4d2586acaa697d40ac710ceed2c201487b0eb2ea2651f56025bfabc7f5a",
                size=6_799,
            ),
            UpstreamFile(
                name="LICENSE.mit.txt",
                path=_LICENCE_PATH,
                sha256="7d3e10ed82f071f6f96ff6bf660826472ca1045d546cdd2ccb3ffda2103588f7",
                size=1_066,
            ),
        ),
    ),
)

UPSTREAM: Mapping[str, UpstreamDataset] = MappingProxyType({d.folder: d for d in _DATASETS})


def notice_text(dataset: UpstreamDataset) -> str:
    """The NOTICE.md written beside fetched files: where they came from and what they are."""
    lines = [
        f"# {dataset.folder} (data files only, fetched by `capreg datasets fetch`)",
        "",
        f"- Source repository: https://github.com/{dataset.repository}",
        f"- Commit: {dataset.commit}",
        f"- Licence: {dataset.licence} (the repository's LICENSE, verbatim as "
        f"{dataset.licence_file})",
        "",
        "Files (downloaded unmodified at that commit; each verified by size and SHA-256):",
        "",
        "| here | upstream path | sha256 | bytes |",
        "| --- | --- | --- | ---: |",
    ]
    lines += [f"| {f.name} | {f.path} | {f.sha256} | {f.size:,} |" for f in dataset.files]
    return "\n".join(lines) + "\n"
