#!/usr/bin/python3
"""CEL conformance runner: cel-spec SimpleTestFile textprotos against our evaluator.

    conformance.py TOOL [DIR]     (DIR defaults to the reference data's cel-conformance folder:
                                   $GPUSLICE_REFERENCE_DIR or ../shared/reference; skipped, saying
                                   so once, when absent)

Runs every test of every *.textproto in DIR through TOOL (cel_eval_tool, one JSON request per
line), prints per file passed/failed/skipped and the features it skips, as TAP:

- every file is a real check: at least 95 % of the tests it runs pass (no file is "reported only");
- a file whose tests were all skipped is not a pass: a TAP SKIP for an optional file, a failure
  for a required one;
- skips are counted where the harness sees them: one TAP "# SKIP" line per file that skipped
  tests, naming how many and why; a required file may skip at most 25 % of its tests;
- a required file (basic, comparisons, logic, lists, macros, string, fields, integer_math,
  conversions, plumbing) missing from the folder is a failure.
"""
import json
import math
import os
import re
import subprocess
import sys

from gstest import Tap, reference_path, skip_reference

REQUIRED = ["basic", "comparisons", "logic", "lists", "macros", "string", "fields",
            "integer_math", "conversions", "plumbing"]
THRESHOLD = 0.95
MAX_SKIPPED_REQUIRED = 0.25


# ---------------------------------------------------------------- textproto parser

class ParseError(Exception):
    pass


_ESC = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39,
        '"': 34, "?": 63}


def _unescape(body):
    """Protobuf text-format string body -> bytes."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        i += 1
        c = body[i]
        if c in _ESC:
            out.append(_ESC[c])
            i += 1
        elif c in "01234567":
            j = i
            while j < len(body) and j < i + 3 and body[j] in "01234567":
                j += 1
            out.append(int(body[i:j], 8) & 0xFF)
            i = j
        elif c in "xX":
            j = i + 1
            while j < len(body) and j < i + 3 and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 1:j], 16))
            i = j
        elif c == "u":
            out += chr(int(body[i + 1:i + 5], 16)).encode("utf-8", "surrogatepass")
            i += 5
        elif c == "U":
            out += chr(int(body[i + 1:i + 9], 16)).encode("utf-8")
            i += 9
        else:
            raise ParseError(f"bad escape \\{c}")
    return bytes(out)


_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>-?(?:inf|nan|infinity)\b|-?(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[fFuU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*|\[[A-Za-z0-9_.]+(?:/[A-Za-z0-9_.]+)+\])
  | (?P<punct>[{}\[\]:,<>;])
""", re.X)


def _tokens(text):
    pos = 0
    toks = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ParseError(f"unexpected text at offset {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        toks.append((kind, m.group(kind)))
    return toks


class _Parser:
    def __init__(self, text):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def message(self, close=None):
        """Fields until `close` (or end): dict name -> list of values."""
        fields = {}
        while True:
            kind, val = self.peek()
            if kind is None:
                if close:
                    raise ParseError("unexpected end of input")
                return fields
            if kind == "punct" and val == close:
                self.take()
                return fields
            if kind == "punct" and val in ",;":
                self.take()
                continue
            if kind != "ident":
                raise ParseError(f"expected field name, got {val!r}")
            self.take()
            name = val
            k2, v2 = self.peek()
            if k2 == "punct" and v2 == ":":
                self.take()
                k2, v2 = self.peek()
            if k2 == "punct" and v2 == "[":
                self.take()
                while True:
                    k3, v3 = self.peek()
                    if k3 == "punct" and v3 == "]":
                        self.take()
                        break
                    if k3 == "punct" and v3 == ",":
                        self.take()
                        continue
                    fields.setdefault(name, []).append(self.value())
                continue
            fields.setdefault(name, []).append(self.value())

    def value(self):
        kind, val = self.take()
        if kind == "punct" and val in "{<":
            return self.message("}" if val == "{" else ">")
        if kind == "str":
            data = _unescape(val[1:-1])
            # adjacent string literals concatenate
            while self.peek()[0] == "str":
                data += _unescape(self.take()[1][1:-1])
            return data
        if kind == "num":
            return ("num", val)
        if kind == "ident":
            return ("ident", val)
        raise ParseError(f"unexpected value {val!r}")


def parse_textproto(text):
    return _Parser(text).message()


def first(msg, name, default=None):
    v = msg.get(name)
    return v[0] if v else default


# ---------------------------------------------------------------- values

class Skip(Exception):
    pass


def _num(tok, kind):
    s = tok[1] if isinstance(tok, tuple) else str(tok)
    s = s.rstrip("uUfF") if kind != "double" else s.rstrip("fF")
    if kind == "double":
        low = s.lower()
        if low in ("inf", "infinity"):
            return math.inf
        if low in ("-inf", "-infinity"):
            return -math.inf
        if low in ("nan", "-nan"):
            return math.nan
        return float(s)
    return int(s, 0)


def expected_value(v):
    """Proto Value message -> typed JSON as the tool prints it (numbers as Python values)."""
    if "int64_value" in v:
        return {"int": _num(first(v, "int64_value"), "int")}
    if "uint64_value" in v:
        return {"uint": _num(first(v, "uint64_value"), "uint")}
    if "double_value" in v:
        return {"double": _num(first(v, "double_value"), "double")}
    if "string_value" in v:
        return {"string": first(v, "string_value").decode("utf-8")}
    if "bytes_value" in v:
        return {"bytes": first(v, "bytes_value").hex()}
    if "bool_value" in v:
        return {"bool": first(v, "bool_value")[1] == "true"}
    if "null_value" in v:
        return {"null": None}
    if "list_value" in v:
        lv = first(v, "list_value")
        return {"list": [expected_value(x) for x in lv.get("values", [])]}
    if "map_value" in v:
        mv = first(v, "map_value")
        return {"map": [[expected_value(first(e, "key")), expected_value(first(e, "value"))]
                        for e in mv.get("entries", [])]}
    if "type_value" in v:
        return {"type": first(v, "type_value").decode()}
    if "object_value" in v:
        raise Skip("protobuf messages")
    if "enum_value" in v:
        raise Skip("enums")
    raise Skip("value kind " + ",".join(v.keys()))


def to_request_value(v):
    """Expected-style value -> the tool's typed JSON (ints as strings)."""
    (k, x), = v.items()
    if k in ("int", "uint"):
        return {k: str(x)}
    if k == "double":
        if math.isnan(x):
            return {"double": "NaN"}
        if math.isinf(x):
            return {"double": "Infinity" if x > 0 else "-Infinity"}
        return {"double": x}
    if k == "list":
        return {"list": [to_request_value(e) for e in x]}
    if k == "map":
        return {"map": [[to_request_value(a), to_request_value(b)] for a, b in x]}
    return v


def normalize(v):
    """Tool output -> comparable Python structure."""
    (k, x), = v.items()
    if k in ("int", "uint"):
        return (k, int(x))
    if k == "double":
        if isinstance(x, str):
            x = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(x, math.nan)
        return (k, float(x))
    if k == "list":
        return (k, [normalize(e) for e in x])
    if k == "map":
        return (k, [(normalize(a), normalize(b)) for a, b in x])
    return (k, x)


def same(a, b):
    if a[0] != b[0]:
        return False
    k = a[0]
    if k == "double":
        if math.isnan(a[1]) and math.isnan(b[1]):
            return True
        return a[1] == b[1]
    if k == "list":
        return len(a[1]) == len(b[1]) and all(same(x, y) for x, y in zip(a[1], b[1]))
    if k == "map":
        if len(a[1]) != len(b[1]):
            return False
        for ka, va in a[1]:
            if not any(same(ka, kb) and same(va, vb) for kb, vb in b[1]):
                return False
        return True
    return a[1] == b[1]


_PRIM = {"STRING": "string", "INT64": "int", "UINT64": "uint", "DOUBLE": "double",
         "BOOL": "bool", "BYTES": "bytes"}


def decl_type(t):
    if "primitive" in t:
        return _PRIM[first(t, "primitive")[1]]
    if "map_type" in t:
        m = first(t, "map_type")
        return f"map({decl_type(first(m, 'key_type'))},{decl_type(first(m, 'value_type'))})"
    if "list_type" in t:
        return f"list({decl_type(first(first(t, 'list_type'), 'elem_type'))})"
    if "dyn" in t:
        return "dyn"
    if "null" in t:
        return "null_type"
    if "message_type" in t:
        raise Skip("protobuf messages")
    if "well_known" in t:
        raise Skip("well-known types (timestamps, durations, wrappers)")
    if "abstract_type" in t or "type_param" in t:
        raise Skip("abstract types")
    raise Skip("declaration type " + ",".join(t.keys()))


_FEATURES = [
    (re.compile(r"google\.protobuf|TestAllTypes|NestedTestAllTypes|\bproto[23]?\.|"
                r"\b[A-Za-z_][A-Za-z0-9_.]*\s*\{\s*[A-Za-z_]*\s*[:}]"), "protobuf messages"),
    (re.compile(r"\.optMap|\.optFlatMap"), "optional types: optMap/optFlatMap"),
    (re.compile(r"\bmath\.|\bbase64\.|\blists\.|\bproto\."), "extension libraries"),
]


def skip_reason(test):
    expr = first(test, "expr", b"").decode("utf-8", "replace")
    if first(test, "check_only") or "typed_result" in test or "deduced_type" in test:
        return "type deduction results"
    if "unknown" in test or "any_unknowns" in test:
        return "unknowns"
    if first(test, "disable_macros"):
        return "disabling macros"
    for rx, why in _FEATURES:
        if rx.search(expr):
            return why
    for d in test.get("type_env", []):
        if "function" in d:
            return "custom function declarations"
    return None


# ---------------------------------------------------------------- runner

class Tool:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

    def ask(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"tool died (exit {self.p.poll()}) on {req['expr']!r}")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        return self.p.wait()


def run_test(tool, test):
    """Returns (outcome, detail): outcome in pass / fail / skip."""
    why = skip_reason(test)
    if why:
        return "skip", why
    try:
        want = None
        if "value" in test:
            want = expected_value(first(test, "value"))
        elif "eval_error" in test or "any_eval_errors" in test:
            want = "error"
        else:
            want = {"bool": True}  # SimpleTest default: result true
        decls = []
        for d in test.get("type_env", []):
            ident = first(d, "ident")
            if ident is None:
                raise Skip("declaration kind")
            decls.append({"name": first(d, "name").decode(),
                          "type": decl_type(first(ident, "type"))})
        bindings = {}
        for b in test.get("bindings", []):
            inner = first(first(b, "value"), "value")
            if inner is None:
                raise Skip("non-value bindings")
            bindings[first(b, "key").decode()] = to_request_value(expected_value(inner))
    except Skip as s:
        return "skip", str(s)
    expr = first(test, "expr").decode("utf-8")
    req = {"expr": expr, "check": not first(test, "disable_check", ("ident", "false"))[1] == "true",
           "decls": decls, "bindings": bindings}
    container = first(test, "container")
    if container:
        req["container"] = container.decode()
    got = tool.ask(req)
    if want == "error":
        if "error" in got and got.get("phase") != "tool":
            return "pass", None
        return "fail", f"want an error, got {got}"
    if "error" in got:
        return "fail", f"want {want}, got error: {got['error']}"
    if same(normalize(to_request_value(want)), normalize(got["value"])):
        return "pass", None
    return "fail", f"want {to_request_value(want)}, got {got['value']}"


def main():
    t = Tap()
    if len(sys.argv) < 2:
        print("usage: conformance.py TOOL [DIR]", file=sys.stderr)
        return 2
    tool_path = sys.argv[1]
    folder = sys.argv[2] if len(sys.argv) > 2 else reference_path("cel-conformance")
    if folder is None:
        skip_reference(t, "cel-spec conformance suite", "cel-conformance")
        tool = Tool(tool_path)
        t.is_eq(tool.close(), 0, "evaluator tool exits cleanly")
        return t.done()
    files = sorted(f[:-len(".textproto")] for f in os.listdir(folder) if f.endswith(".textproto"))
    t.ok(files, f"conformance files found in {folder}")
    tool = Tool(tool_path)
    features = {}
    totals = [0, 0, 0]
    for name in files:
        with open(os.path.join(folder, name + ".textproto"), encoding="utf-8") as f:
            try:
                doc = parse_textproto(f.read())
            except ParseError as e:
                t.ok(False, f"{name}: textproto parses", diag=str(e))
                continue
        passed = failed = skipped = 0
        failures = []
        for section in doc.get("section", []):
            sname = first(section, "name", b"").decode()
            for test in section.get("test", []):
                tname = first(test, "name", b"").decode()
                outcome, detail = run_test(tool, test)
                if outcome == "pass":
                    passed += 1
                elif outcome == "skip":
                    skipped += 1
                    features.setdefault(detail, {}).setdefault(name, 0)
                    features[detail][name] += 1
                else:
                    failed += 1
                    failures.append(f"{sname}/{tname}: {first(test, 'expr').decode()!r}: {detail}")
        run = passed + failed
        total = run + skipped
        totals[0] += passed
        totals[1] += failed
        totals[2] += skipped
        line = f"{name}: passed {passed}, failed {failed}, skipped {skipped} of {total}"
        required = name in REQUIRED
        if run == 0:
            if required:
                t.ok(False, line + ": a required file must run tests")
            else:
                t.skip(line, f"all {total} tests use features the evaluator does not have")
        else:
            rate = passed / run
            t.ok(rate >= THRESHOLD,
                 line + f" ({100 * rate:.1f}% of {run} run, >= {100 * THRESHOLD:.0f}% needed)")
        if skipped and run:
            why = ", ".join(sorted({feat for feat, per in features.items() if name in per}))
            t.skip(f"{name}: {skipped} of {total} tests", why)
            if required:
                t.ok(skipped <= MAX_SKIPPED_REQUIRED * total,
                     f"{name}: skips at most {100 * MAX_SKIPPED_REQUIRED:.0f}% of a required file",
                     diag=f"{skipped} of {total}")
        for fl in failures:
            t.diag("  FAIL " + fl)
    for r in REQUIRED:
        if r not in files:
            t.ok(False, f"{r}: required file present in {folder}")
    t.diag(f"total: passed {totals[0]}, failed {totals[1]}, skipped {totals[2]}")
    t.diag("skipped features (tests per file):")
    for feat in sorted(features):
        per = ", ".join(f"{k} {v}" for k, v in sorted(features[feat].items()))
        t.diag(f"  {feat}: {per}")
    t.is_eq(tool.close(), 0, "evaluator tool exits cleanly")
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
