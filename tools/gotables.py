"""Writes src/compat/gotypes.rs: the Go struct tables of k8s.io/api v0.32.10 core/v1 and
k8s.io/apimachinery v0.32.10 meta/v1 (the versions kruise vendors) reachable from PodTemplateSpec
and PersistentVolumeClaim, read from their struct tags.

    (cd tools/gofixtures && go mod download)   # fetches the Go sources into the module cache
    python3 tools/gotables.py > src/compat/gotypes.rs && cargo fmt
"""
import os
import re
import subprocess
import sys

MODCACHE = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
CORE = os.path.join(MODCACHE, "k8s.io/api@v0.32.10/core/v1/types.go")
META = os.path.join(MODCACHE, "k8s.io/apimachinery@v0.32.10/pkg/apis/meta/v1/types.go")
HEADER = open(os.path.join(os.path.dirname(__file__), "gotypes_header.rs")).read()

def parse(path, pkg):
    src = open(path).read()
    structs, aliases = {}, {}
    for m in re.finditer(r'^type (\w+) struct \{\n(.*?)^\}', src, re.S | re.M):
        fields = []
        for line in m.group(2).split('\n'):
            line = line.strip()
            if not line or line.startswith('//'):
                continue
            fm = re.match(r"^(?:(\w+)\s+)?([\w\.\*\[\]]+)\s+`json:\"([^\"]*)\"", line)
            if not fm:
                fm2 = re.match(r'^([\w\.\*]+)\s+`json:"([^"]*)"', line)
                if fm2:
                    fields.append((None, fm2.group(1), fm2.group(2)))
                continue
            name, ty, tag = fm.groups()
            fields.append((name, ty, tag))
        structs[pkg + m.group(1)] = fields
    for m in re.finditer(r'^type (\w+) (string|int32|int64|bool|map\[\w+\][\w\.]+|\[\]\w+)\s*$', src, re.M):
        aliases[pkg + m.group(1)] = m.group(2)
    return structs, aliases

cs, ca = parse(CORE, "")
ms, ma = parse(META, "metav1.")
structs = {**cs, **ms}
aliases = {**ca, **ma}
aliases["types.UID"] = "string"

emitted = {}
order = []

def const_name(t):
    t = t.replace("metav1.", "Meta")
    return re.sub(r'(?<!^)(?=[A-Z][a-z])', '_', t).upper()

def resolve(ty, ctx):
    """Go type -> Rust `Go` expression."""
    if ty.startswith('*'):
        return resolve(ty[1:], ctx)
    if ty == '[]byte':
        return 'Go::Any'
    if ty.startswith('[]'):
        inner = resolve(ty[2:], ctx)
        if inner == 'Go::Str':
            return 'STRS'
        return f'Go::List(&{inner})'
    if ty.startswith('map['):
        val = ty[ty.index(']') + 1:]
        if val in ('resource.Quantity',):
            return 'Go::QuantityMap'
        v = resolve(val, ctx)
        if v == 'Go::Str':
            return 'Go::StrMap'
        return 'Go::Any'
    if ty in ('string',):
        return 'Go::Str'
    if ty in ('int32', 'int64', 'int', 'uint32', 'uint64'):
        return 'Go::Int'
    if ty == 'bool':
        return 'Go::Bool'
    if ty == 'resource.Quantity':
        return 'Go::Quantity'
    if ty == 'intstr.IntOrString':
        return 'Go::IntOrStr'
    if ty in ('metav1.Time', 'Time'):
        return 'Go::Time'
    if ty == 'metav1.Duration' or ty == 'Duration':
        return 'Go::Str'
    q = ty if (ty in structs or ty in aliases) else ('metav1.' + ty if ctx.startswith('metav1.') else ty)
    if q not in structs and q not in aliases and ('metav1.' + ty) in structs:
        q = 'metav1.' + ty
    if q in aliases:
        a = aliases[q]
        if a.startswith('map['):
            return resolve(a, ctx)
        return resolve(a, ctx)
    if q in structs:
        emit(q)
        return f'Go::Struct({const_name(q)})'
    raise SystemExit(f"unknown type {ty} in {ctx}")

def emit(t):
    if t in emitted:
        return
    emitted[t] = None
    rows = []
    for name, ty, tag in structs[t]:
        parts = tag.split(',')
        jname = parts[0]
        omit = 'omitempty' in parts[1:]
        if jname == '-':
            continue
        if name is None or (jname == '' and 'inline' in parts):
            # embedded struct
            base = ty.lstrip('*')
            q = base if base in structs else ('metav1.' + base.split('.')[-1])
            if base.startswith('metav1.'):
                q = base
            if q not in structs and ('metav1.' + base) in structs:
                q = 'metav1.' + base
            if jname == '':
                emit(q)
                rows.append(f'inline({const_name(q)})')
                continue
            # embedded with a name (e.g. ObjectMeta `json:"metadata"`)
            g = resolve(base, t)
            rows.append(f'{"p" if ty.startswith("*") else ("o" if omit else "f")}("{jname}", {g})')
            continue
        g = resolve(ty, t)
        pointer = ty.startswith('*')
        if pointer and omit:
            rows.append(f'p("{jname}", {g})')
        elif pointer:
            rows.append(f'np("{jname}", {g})')
        elif omit:
            rows.append(f'o("{jname}", {g})')
        else:
            rows.append(f'f("{jname}", {g})')
    emitted[t] = rows
    order.append(t)

for root in sys.argv[1:] or ["PodTemplateSpec", "PersistentVolumeClaim"]:
    emit(root)
sys.stdout.write(HEADER)
for t in order:
    body = ", ".join(rows.replace("META_", "") for rows in emitted[t])
    print(f"/// `{t}`.")
    print(f"pub(crate) const {const_name(t).replace('META_', '')}: &[Field] = &[{body}];")
