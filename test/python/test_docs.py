"""docs/DIALECTS.md is the rendering of the IRDL definitions; it must not drift from them."""

from pathlib import Path

from glow_mlir.tools import dialect_docs

ROOT = Path(__file__).resolve().parents[2]


def test_dialects_doc_is_current() -> None:
    committed = (ROOT / "docs" / "DIALECTS.md").read_text()
    assert committed == dialect_docs.render(), (
        "docs/DIALECTS.md is stale: run `python -m glow_mlir.tools.dialect_docs > docs/DIALECTS.md`"
    )


def test_every_op_is_documented_with_semantics() -> None:
    for source in dialect_docs.dialect_sources():
        name, ops = dialect_docs.parse_ops(source)
        assert ops, name
        for op in ops:
            assert op.doc, f"{name}.{op.name} has no semantics comment in its IRDL file"
            assert op.results or op.roles, f"{name}.{op.name} neither returns a value nor writes an operand"
