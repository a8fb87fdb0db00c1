"""cg_launch.py CALLGRIND_OUT — for bench/launch_cost.sh: the instructions
callgrind collected (it ran with --toggle-collect on the shim's launch_event
and launch_done) less what the fake driver executed when the shim called it,
and the number of launches (calls of launch_event). Prints "INSTR LAUNCHES".
Format: valgrind's docs/callgrind-format (names compressed as "(id) name"
once, "(id)" after; a calls= line's next line holds the call's inclusive
cost; cob= names the callee's object for that call, else it is the caller's)."""
import re, sys

SPEC = re.compile(r'^(ob|cob|fl|fi|fe|cfi|cfl|fn|cfn)=(?:\((\d+)\))?\s*(.*)$')
TABLE = {'ob': 'ob', 'cob': 'ob', 'fn': 'fn', 'cfn': 'fn'}  # files are not needed
names = {'ob': {}, 'fn': {}}


def resolve(key, ident, text):
    if key not in TABLE:
        return None
    t = names[TABLE[key]]
    if ident is None:
        return text
    if text:
        t[ident] = text
    return t.get(ident, '')


def main(path):
    total = fake = launches = 0
    ob, cob, cfn, in_call = '', None, '', False
    fake_obj = lambda o: '/fakecuda/' in o
    for line in open(path, errors='replace'):
        if in_call:  # "position inclusive-cost" of the call just named
            parts = line.split()
            callee = cob if cob is not None else ob
            # calls from the shim only: the fake's own calls through its PLT
            # (an object callgrind names "???") are inside those already
            if len(parts) > 1 and fake_obj(callee) and not fake_obj(ob) and ob.startswith('/'):
                fake += int(parts[1])
            in_call, cob = False, None
            continue
        m = SPEC.match(line)
        if m:
            key, ident, text = m.groups()
            v = resolve(key, ident, text.strip())
            if key == 'ob':
                ob = v
            elif key == 'cob':
                cob = v
            elif key == 'cfn':
                cfn = v
            continue
        if line.startswith('calls='):
            if cfn == 'launch_event':
                launches += int(line[6:].split()[0])
            in_call = True
        elif line.startswith(('summary:', 'totals:')):
            total = int(line.split()[1])
    print(total - fake, launches)


main(sys.argv[1])
