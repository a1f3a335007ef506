#!/usr/bin/env python3
"""argorder.py: no call in mtc's sources has two arguments that each make IR values.

C leaves the order in which a call's arguments are evaluated to the compiler (gcc made the
last first, clang the first), so in f(make_a(), make_b()) the two values are made, named and
placed in an order that depends on the compiler that built mtc, and so would the IR and
every dump after it. A function makes values when it calls func_op, func_value or mod_decl,
or a function that does (transitively, by name). Reads the preprocessed sources (macros
expanded) given as arguments, each as written by `cc -E -P`; prints each such call and a
closing line `N passed, N failed`: the files without such a call, the calls.
usage: argorder.py [--skipped=N] FILE.i...   (N: files left out, for the closing line)
"""
import os
import re
import sys

ID = re.compile(r'\b([A-Za-z_][A-Za-z0-9_]*)\s*\(')
DEF = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\([^;{]*\)\s*\n\{', re.M)
KEYWORDS = {'if', 'while', 'for', 'switch', 'return', 'sizeof', '_Alignof', '__typeof__'}


def lines(t):
    """The text with the preprocessor's line markers blanked, and for each of its lines the
    source file and line it came from."""
    out, where, f, n = [], [], '?', 0
    for l in t.split('\n'):
        m = re.match(r'#\s*(\d+)\s+"([^"]*)"', l)
        if m:
            f, n = m.group(2), int(m.group(1))
            out.append('')
            where.append((f, n))
            continue
        out.append(l)
        where.append((f, n))
        n += 1
    return '\n'.join(out), where


def strip(t):
    """Comments, strings and character constants blanked (newlines kept)."""
    t = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), t, flags=re.S)
    t = re.sub(r'"(\\.|[^"\\\n])*"', '""', t)
    return re.sub(r"'(\\.|[^'\\\n])+'", "'x'", t)


def close(t, i):
    """The index of the bracket closing the one at t[i] (len(t) if none)."""
    d = 0
    for j in range(i, len(t)):
        if t[j] in '([{':
            d += 1
        elif t[j] in ')]}':
            d -= 1
            if d == 0:
                return j
    return len(t)


def args(t, i):
    """The top-level arguments of the call whose '(' is t[i]."""
    j, d, cur, out = i + 1, 1, '', []
    while j < len(t):
        c = t[j]
        if c in '([{':
            d += 1
        elif c in ')]}':
            d -= 1
            if d == 0:
                break
        if c == ',' and d == 1:
            out.append(cur)
            cur = ''
        else:
            cur += c
        j += 1
    out.append(cur)
    return out


def main(paths, skipped):
    funcs = []          # (path, name, body, first line)
    for p in paths:
        t, where = lines(open(p, encoding='utf-8', errors='replace').read())
        t = strip(t)
        for m in DEF.finditer(t):
            s = m.end() - 1
            e = close(t, s)
            funcs.append((p, where, m.group(1), t[s:e + 1], t.count('\n', 0, s)))
    calls = {}
    for _, _, name, body, _ in funcs:
        calls.setdefault(name, set()).update(ID.findall(body))
    makes = {'func_op', 'func_value', 'mod_decl'}
    grown = True
    while grown:
        grown = False
        for name, cs in calls.items():
            if name not in makes and cs & makes:
                makes.add(name)
                grown = True
    bad = {}
    for ipath, where, name, body, line0 in funcs:
        for m in ID.finditer(body):
            if m.group(1) in KEYWORDS:
                continue
            made = [a.strip() for a in args(body, m.end() - 1) if set(ID.findall(a)) & makes]
            if len(made) >= 2:
                p, line = where[line0 + body.count('\n', 0, m.start())]
                bad.setdefault(ipath, []).append(line)
                print('FAIL: %s:%d: in %s: %s(...) makes values in %d arguments: %s'
                      % (p, line, name, m.group(1), len(made),
                         ' | '.join(re.sub(r'\s+', ' ', a)[:60] for a in made)))
    if len(makes) < 20:
        print('FAIL: only %d functions make values: the sources were not read' % len(makes))
        bad['-'] = [0]
    print('%d passed, %d failed%s' % (len(set(paths) - set(bad)), sum(len(v) for v in bad.values()),
                                      ', %d skipped' % skipped if skipped else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    a = sys.argv[1:]
    n = int(a.pop(0).split('=')[1]) if a and a[0].startswith('--skipped=') else 0
    sys.exit(main(a, n))
