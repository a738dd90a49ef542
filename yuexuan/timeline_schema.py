"""The timeline JSON's contract, ``timeline.schema.json`` (JSON Schema draft 2020-12), applied.

:func:`validate` refuses, in one line naming the field, anything the schema does not allow; the
schema is read with :mod:`importlib.resources` and applied with :mod:`jsonschema`. Two type rules
are stricter than JSON Schema's because Python's ``json`` reads more than JSON: a number must be
finite (``json`` accepts NaN and Infinity), and an integer is written without a fraction (``60``,
not ``60.0``, which Python reads as a float).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:                    # jsonschema is imported when first needed (start-up time)
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

#: a predicate on one JSON value
Test = Callable[[Any], bool]

SCHEMA_VERSION = 3
SCHEMA_FILE = "timeline.schema.json"      # in the package folder
RECOMPILE = "recompile the cue sheet with `yuexuan compile CUES -o OUT.mid --timeline OUT.json`"

_TYPES = {
    "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x),
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "array": lambda x: isinstance(x, list),
    "object": lambda x: isinstance(x, dict),
}


@functools.cache        # a constant of the installed package: read once
def schema() -> dict[str, Any]:
    """The JSON Schema of the timeline, as shipped in the package."""
    return json.loads((resources.files("yuexuan") / SCHEMA_FILE).read_text(encoding="utf-8"))


@functools.cache
def validator() -> Validator:
    """A draft 2020-12 validator of :func:`schema`, with the two stricter type rules."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many({k: (lambda g: lambda _, x: g(x))(f) for k, f in _TYPES.items()})
    return jsonschema.validators.extend(base, type_checker=types)(schema())


def validate(d: object) -> None:
    """Raise ValueError, one line naming the field, unless ``d`` is a timeline of this schema."""
    if not isinstance(d, dict):
        raise ValueError("a timeline is a JSON object")
    _schema_number(d)
    rest, fast = dict(d), _fast_arrays()
    checked = all(all(map(fast[k], d[k])) for k in fast if isinstance(d.get(k), list))
    rest.update({k: [] for k in fast if isinstance(d.get(k), list)})
    if not checked or not validator().is_valid(rest):
        from jsonschema.exceptions import best_match

        error = best_match(validator().iter_errors(d))
        if error is not None:
            raise ValueError(_message(error))
    _cross_checks(d)


class SchemaVersionError(ValueError):
    """A timeline of another schema number: its message is a whole sentence telling to recompile."""


def _schema_number(d: dict[str, Any]) -> None:
    """Refuse, in one line (:class:`SchemaVersionError`), a timeline of another schema than this
    module reads."""
    version = d.get("schema")
    if type(version) is int and version == SCHEMA_VERSION:
        return
    if "schema" not in d:
        raise SchemaVersionError(f"schema: no timeline schema number (this yuexuan reads schema "
                                 f"{SCHEMA_VERSION}); {RECOMPILE}")
    if type(version) is int and version < SCHEMA_VERSION:
        raise SchemaVersionError(f"schema: timeline schema {version} is no longer read; {RECOMPILE}")
    raise SchemaVersionError(f"schema: timeline schema {version!r:.20} is not read by this yuexuan "
                             f"(it reads schema {SCHEMA_VERSION}); {RECOMPILE}")


def _cross_checks(d: dict[str, Any]) -> None:
    """What the schema cannot say: cue ids and aliases are unique, every note and beat names a cue by
    its id, and a selection closes one space per cue."""
    ids = set()
    for i, c in enumerate(d["cues"]):
        if c["id"] in ids:
            raise ValueError(f"cues[{i}].id: {c['id']!r:.40} is the id of an earlier cue too")
        ids.add(c["id"])
    names = set(ids)
    for i, c in enumerate(d["cues"]):
        for k, a in enumerate(c.get("aliases", ())):
            if a in names:
                raise ValueError(f"cues[{i}].aliases[{k}]: {a!r:.40} already names a cue")
            names.add(a)
    for key in ("notes", "beats"):
        for i, x in enumerate(d[key]):
            if x["cue"] not in ids:
                raise ValueError(f"{key}[{i}].cue: {x['cue']!r:.40} is not the id of a cue of this timeline")
    sel = d.get("selection")
    if sel is not None and len(sel["closed_s"]) != len(d["cues"]):
        raise ValueError(f"selection.closed_s: expected one number per cue ({len(d['cues'])}), "
                         f"got {len(sel['closed_s'])}")


# -- messages ------------------------------------------------------------------------------------

_NAMES = {"number": "a finite number", "integer": "an integer", "string": "a string", "boolean": "a boolean",
          "null": "null", "array": "an array", "object": "an object"}


def _json_name(x: object) -> str:
    return next((_NAMES[t] for t in ("boolean", "integer", "number", "string", "null", "array", "object")
                 if _TYPES[t](x)), type(x).__name__)


def _where(path: Iterable[str | int]) -> str:
    """A JSON path as the messages name it: ``notes[3].time``, ``instruments['建鼓·东'].gm_program``."""
    out, parent = "", None
    for k in path:
        if isinstance(k, int):
            out += f"[{k}]"
        elif parent in ("instruments", "variants", "places", "attendants"):   # objects keyed by name
            out += f"[{k!r}]"
        else:
            out += f".{k}" if out else k
        parent = k
    return out or "timeline"


def _message(error: ValidationError) -> str:
    """One line naming the field at fault and what was expected, from a jsonschema error."""
    # JSON values: every error jsonschema yields has them set (its stubs also allow "unset")
    want: Any = error.validator_value
    x: Any = error.instance
    node: Any = error.schema
    kind = error.validator
    where = _where(error.absolute_path)
    if kind == "required":
        return f"{where}: missing field {next(k for k in want if k not in x)!r}"
    if kind == "additionalProperties":
        known = node.get("properties", {})
        return f"{where}: unknown field {next(k for k in x if k not in known)!r}"
    shown = f"{x!r:.40}" if not isinstance(x, (dict, list)) else _json_name(x)
    if kind == "type":
        names = " or ".join(_NAMES[t] for t in ([want] if isinstance(want, str) else want))
        return f"{where}: expected {names}, got {shown}"
    bounds = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if kind in bounds:
        return f"{where}: expected a value {bounds[kind]} {want}, got {shown}"
    if kind in ("minItems", "maxItems"):
        lo, hi = node.get("minItems", 0), node.get("maxItems")
        return f"{where}: expected {lo if lo == hi else f'{lo} or more'} items, got {len(x)}"
    if kind == "minLength":
        return f"{where}: must not be empty"
    if kind == "enum":
        return f"{where}: expected {' | '.join(map(str, want))}, got {shown}"
    return f"{where}: {' '.join(error.message.split())[:120]}"


# -- the fast path for long arrays of flat records ---------------------------------------------------
# jsonschema spends about 15 µs per field; a default timeline has 3,200 notes (0.5 s) and a large
# roster 190,000 (30 s). The arrays whose items are objects of scalar fields (notes, beats) are
# therefore checked by predicates built here from the same schema, for the keywords listed below
# only (any other keyword and the array goes to jsonschema). The predicates only decide "valid";
# a document they reject is validated again by jsonschema, which words the error (and accepts, for
# instance, a numpy float that a predicate, testing exact JSON-decoded types, turned down).
# tests/test_timeline_schema.py checks that they agree with jsonschema.

_PY_TYPES = {"number": (int, float), "integer": (int,), "string": (str,), "boolean": (bool,),
             "null": (type(None),)}
_ANNOTATIONS = {"description", "default", "title", "$comment"}
_SCALAR_KEYWORDS = {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "minLength"}


def _resolved(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with a local ``$ref`` (``#/$defs/NAME``) merged in, recursively."""
    ref = node.get("$ref")
    if ref is None:
        return node
    target = schema()["$defs"][ref.removeprefix("#/$defs/")]
    return {**_resolved(target), **{k: v for k, v in node.items() if k != "$ref"}}


def _numbers_test(prop: dict[str, Any]) -> Test | None:
    """A predicate equal to ``prop`` for an array of numbers (or null), or None if ``prop`` is not that."""
    kinds = prop.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    item = _scalar_test(prop.get("items", {}))
    if set(prop) - {"type", "items", "minItems"} - _ANNOTATIONS or not kinds or "array" not in kinds \
            or set(kinds) - {"array", "null"} or item is None:
        return None
    nullable, min_items = "null" in kinds, prop.get("minItems", 0)

    def test(x: Any) -> bool:
        if x is None:
            return nullable
        return type(x) is list and len(x) >= min_items and all(map(item, x))
    return test


def _scalar_test(prop: dict[str, Any]) -> Test | None:
    """A predicate equal to ``prop`` for a scalar field (or an array of numbers), or None if
    ``prop`` is not that simple."""
    prop = _resolved(prop)
    if "items" in prop:
        return _numbers_test(prop)
    kinds = prop.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    enum = prop.get("enum")
    if set(prop) - _SCALAR_KEYWORDS - _ANNOTATIONS or not kinds or set(kinds) - set(_PY_TYPES) or (
            enum is not None and not all(isinstance(e, str) for e in enum)):
        return None
    exact = {t for k in kinds for t in _PY_TYPES[k]}   # JSON-decoded values are of these exact types
    lo, hi = prop.get("minimum", -math.inf), prop.get("maximum", math.inf)
    xlo, xhi = prop.get("exclusiveMinimum", -math.inf), prop.get("exclusiveMaximum", math.inf)
    min_len, allowed = prop.get("minLength", 0), None if enum is None else frozenset(enum)

    def test(x: Any) -> bool:
        t = type(x)
        if t not in exact:
            return False
        if t is float or t is int:
            return (t is int or math.isfinite(x)) and lo <= x <= hi and xlo < x < xhi
        if t is str:
            return len(x) >= min_len and (allowed is None or x in allowed)
        return allowed is None
    return test


def _record_test(items: dict[str, Any]) -> Test | None:
    """A predicate equal to ``items`` for an object of scalar fields, or None."""
    items = _resolved(items)
    if set(items) - {"type", "required", "additionalProperties", "properties"} - _ANNOTATIONS or \
            items.get("type") != "object" or items.get("additionalProperties", True) not in (True, False):
        return None
    tests = {k: _scalar_test(p) for k, p in items.get("properties", {}).items()}
    if None in tests.values():
        return None
    closed, required = items.get("additionalProperties", True) is False, frozenset(items.get("required", ()))

    def test(x: Any) -> bool:
        if not isinstance(x, dict) or not required <= x.keys():
            return False
        for k, v in x.items():
            t = tests.get(k)
            if t is None:
                if closed:
                    return False
            elif not t(v):
                return False
        return True
    return test


@functools.cache
def _fast_arrays() -> dict[str, Test]:
    """{top-level key: item predicate} for the arrays of flat records of the schema."""
    out = {}
    for key, node in schema().get("properties", {}).items():
        node = _resolved(node)
        if node.get("type") == "array" and not set(node) - {"type", "items"} - _ANNOTATIONS:
            test = _record_test(node.get("items", {}))
            if test is not None:
                out[key] = test
    return out
