#!/usr/bin/env python3
"""Reads tests/mutation/defects.txt and applies one defect to a source tree (for run.sh).

  defects.py list DEFECTS                 the ids, one a line
  defects.py get DEFECTS ID FIELD         one field (file, tests, what) of a defect
  defects.py check DEFECTS ROOT           every defect matches its file under ROOT exactly once
  defects.py apply DEFECTS ID ROOT        writes the defect into ROOT/<file>; exit 1 unless it
                                          matched exactly once (the file is then left unchanged)
"""
import re
import sys

FIELDS = ("file", "old", "old-re", "new", "tests", "what")


def parse(path):
    defects, cur = [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]\s*", line)
            if m:
                cur = {"id": m.group(1), "line": number}
                defects.append(cur)
                continue
            m = re.fullmatch(r"([a-z-]+):\s?(.*)", line)
            if not m or cur is None or m.group(1) not in FIELDS or m.group(1) in cur:
                sys.exit(f"{path}:{number}: expected '[id]' or one of {', '.join(FIELDS)} once per defect: {line}")
            cur[m.group(1)] = m.group(2).strip()
    ids = set()
    for d in defects:
        where = f"{path}:{d['line']} [{d['id']}]"
        if d["id"] in ids:
            sys.exit(f"{where}: the id is used twice")
        ids.add(d["id"])
        if ("old" in d) == ("old-re" in d):
            sys.exit(f"{where}: needs exactly one of old, old-re")
        for key in ("file", "new", "tests", "what"):
            if key not in d:
                sys.exit(f"{where}: {key} is missing")
    return defects


def unescape(s):
    return s.replace("\\n", "\n")


def mutate(d, text):
    """(new text, number of matches)."""
    if "old" in d:
        old = unescape(d["old"])
        count = text.count(old)
        return text.replace(old, unescape(d["new"]), 1), count
    pattern = re.compile(d["old-re"])
    count = len(pattern.findall(text))
    return pattern.sub(d["new"], text, count=1), count


def find(defects, ident):
    for d in defects:
        if d["id"] == ident:
            return d
    sys.exit(f"no defect '{ident}'")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, defects = argv[1], parse(argv[2])
    if cmd == "list" and len(argv) == 3:
        for d in defects:
            print(d["id"])
    elif cmd == "get" and len(argv) == 5:
        print(find(defects, argv[3]).get(argv[4], ""))
    elif cmd == "check" and len(argv) == 4:
        bad = 0
        for d in defects:
            with open(f"{argv[3]}/{d['file']}", encoding="utf-8") as f:
                text = f.read()
            new, count = mutate(d, text)
            if count != 1 or new == text:
                print(f"[{d['id']}] {d['file']}: the old text matches {count} times (must be once)")
                bad += 1
        return 1 if bad else 0
    elif cmd == "apply" and len(argv) == 5:
        d = find(defects, argv[3])
        path = f"{argv[4]}/{d['file']}"
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new, count = mutate(d, text)
        if count != 1 or new == text:
            print(f"[{d['id']}] {d['file']}: the old text matches {count} times (must be once)", file=sys.stderr)
            return 1
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
