"""The read-side model of comparison.json (harness/bundle/model.py) against the contract: every
dataclass is one level of contract.FIELDS["comparison"], its fields exactly the keys declared
there, in their order, of the declared kind and nullability, so the model and the contract
cannot drift apart; and the model built from real bundles' documents gives back every value."""
from __future__ import annotations

import dataclasses
import json
import types
import typing

import pytest

from checks_support import failed_bundle, full_bundle, instruction_bundle, ulp_bundle
from harness import contract as C, records
from harness.bundle import model as M

DECLARED = C.FIELDS["comparison"]
# contract type -> the annotation a leaf has in the model
LEAF = {"str": str, "name": str, "enum": str, "label": str, "gitsha": str, "sha256": str, "int": int, "num": float,
        "bool": bool, "any": typing.Any}


def levels(cls=M.Comparison, prefix=""):
    """(contract prefix, dataclass) for every level the model mirrors."""
    yield prefix, cls
    for name, kind in typing.get_type_hints(cls).items():
        kind, path = _inner(kind), f"{prefix}{name}"
        while typing.get_origin(kind) in (list, dict):
            path += "[]" if typing.get_origin(kind) is list else ".*"
            kind = _inner(typing.get_args(kind)[-1])
        if dataclasses.is_dataclass(kind):
            yield from levels(kind, path + ".")


def _inner(kind):
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        (kind,) = [a for a in typing.get_args(kind) if a is not type(None)]
    return kind


def children(prefix: str) -> list[str]:
    """The keys the contract declares directly under prefix, in its order."""
    return [k[len(prefix):] for k in DECLARED if k.startswith(prefix) and k != prefix
            and not set(k[len(prefix):]) & set(".[*")]


def test_every_level_is_the_contracts_keys_in_its_order():
    seen = set()
    for prefix, cls in levels():
        assert [f.name for f in dataclasses.fields(cls)] == children(prefix), prefix
        seen.add(prefix)
    # and every level of records the contract declares is one (maps and the open divergence rows are not)
    assert seen == {""} | {k + "." for k, f in DECLARED.items() if f.type == "dict" and children(k + ".")}


def test_every_field_has_the_declared_kind_and_nullability():
    for prefix, cls in levels():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            declared, kind = DECLARED[prefix + f.name], hints[f.name]
            nullable = typing.get_origin(kind) in (typing.Union, types.UnionType)
            assert nullable == (declared.null or declared.optional) or declared.type == "any", (prefix, f.name)
            assert (f.default is not dataclasses.MISSING) == declared.optional, (prefix, f.name)
            kind = _inner(kind)
            if declared.type == "list":
                assert typing.get_origin(kind) is list, (prefix, f.name)
            elif declared.type == "dict":
                assert dataclasses.is_dataclass(kind) or typing.get_origin(kind) is dict, (prefix, f.name)
            else:
                assert kind is LEAF[declared.type], (prefix, f.name)


def _without_absent(doc, model_json):
    """The model's JSON with the keys the document leaves out (the contract's optional ones) dropped."""
    if isinstance(doc, dict) and isinstance(model_json, dict):
        return {k: _without_absent(doc[k], v) for k, v in model_json.items() if k in doc}
    if isinstance(doc, list) and isinstance(model_json, list):
        return [_without_absent(a, b) for a, b in zip(doc, model_json)]
    return model_json


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    where = tmp_path_factory.mktemp("model")
    monkeypatch = pytest.MonkeyPatch()
    try:
        counted = instruction_bundle(where / "counted", monkeypatch)
    finally:
        monkeypatch.undo()
    bundles = [full_bundle(where / "full"), counted, ulp_bundle(where / "ulp"), failed_bundle(where / "failed")]
    return [json.loads((b / C.COMPARISON).read_text()) for b in bundles]


def test_the_model_gives_back_every_value(documents):
    for doc in documents:
        back = _without_absent(doc, records.to_json(M.Comparison.of(doc)))
        assert json.dumps(back, sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_a_document_of_another_shape_is_refused(documents):
    with pytest.raises(TypeError):
        M.Comparison.of([])
    with pytest.raises(KeyError, match="Comparison.stats"):
        M.Comparison.of({k: v for k, v in documents[0].items() if k != "stats"})
    with pytest.raises(TypeError):
        M.Comparison.of({**documents[0], "runs": {}})
