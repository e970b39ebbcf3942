"""The verdicts of a `kompute-kernel-probe --write-tuning` log, for a run
cut off before it wrote its table (the twentieth session's first H100
call): each case's rows grouped, the first (the rules' configuration, in
that build timed once, first) against the best, and the entries the probe
would have written (over 2%). Usage: verdicts.py LOG ENTRIES.json"""
import re, json, sys
rows = []
pat = re.compile(r'^(\S.*?)\s+([\d.]+) ms\s+([\d.]+) (GB/s|TFLOP/s)\s+err (\S+) (ok|BAD)$')
for line in open(sys.argv[1]):
    m = pat.match(line.rstrip())
    if not m: continue
    name = m.group(1).strip()
    if not (name.startswith('matvec') or name.startswith('tune')): continue
    rows.append((name, float(m.group(3)), m.group(4), m.group(6) == 'ok'))
def key_config(name):
    if name.startswith('matvec'):
        t = name.split()
        shape, typ = t[1], t[2]
        n, k = map(int, shape.split('x'))
        th = int(t[t.index('threads')+1]); r = int(t[t.index('rows')+1])
        grid = int(t[t.index('grid')+1].split('/')[0]) if 'grid' in t else 0
        pre = 2 if 'early' in t else (1 if 'prefetch' in t else 0)
        st = 1 if 'stage' in t else 0
        il = int(t[t.index('interleave')+1]) if 'interleave' in t else 0
        return ('matvec-qx', 'f32', typ, 1, n, k), f'{th}:{r}:{grid}:{pre}:{st}:{il}'
    t = name.split()
    # tune gemm khr MxNxK AxB^T->C tile ... CONFIG
    m_, n, k = map(int, t[3].split('x'))
    ab = t[4].split('->')[0].replace('^T', '')
    a, b = ab.split('x', 1)
    kern = 'tiled' if t[2] == 'tiled' else 'coopmat'
    return (kern, a, b, m_, n, k), t[-1]
cases = {}
order = []
for name, rate, unit, ok in rows:
    key, cfg = key_config(name)
    if key not in cases:
        cases[key] = {'rule': cfg, 'rule_rate': rate if ok else 0, 'best': None, 'best_rate': 0, 'unit': unit, 'n': 0}
        order.append(key)
    c = cases[key]; c['n'] += 1
    if ok and rate > c['best_rate']:
        c['best'], c['best_rate'] = cfg, rate
entries = []
for key in order:
    c = cases[key]
    kern, a, b, m_, n, k = key
    beats = c['best'] and c['best'] != c['rule'] and (c['rule_rate'] == 0 or c['best_rate'] > c['rule_rate'] * 1.02)
    print(f"{kern:10s} {a}x{b} {m_}x{n}x{k}: {c['n']} rows, rules {c['rule']} {c['rule_rate']:.2f}, best {c['best']} {c['best_rate']:.2f} {c['unit']} ({c['best_rate']/max(c['rule_rate'],1e-9)-1:+.1%}){' written' if beats else ''}")
    if not beats: continue
    e = {'kernel': kern}
    if kern != 'matvec-qx': e['a'] = a
    e['b'] = b
    if kern != 'matvec-qx': e['m'] = m_
    e.update({'n': n, 'k': k, 'config': c['best'], 'rate': round(c['best_rate'], 2), 'rules': c['rule'], 'rules_rate': round(c['rule_rate'], 2), 'unit': c['unit']})
    entries.append(e)
json.dump({'entries': entries}, open(sys.argv[2], 'w'), indent=2)
