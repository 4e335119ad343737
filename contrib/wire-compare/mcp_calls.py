"""The MCP tools of wire-compare.sh, called through tests/mcp/driver.py (the official SDK).

    mcp_calls.py PYTHON DRIVER FILEWATCHD_BIN

prints each call and its answer, one line each.
"""

import json
import subprocess
import sys

python, driver, binary = sys.argv[1:4]
client = subprocess.Popen([python, driver, binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
print(client.stdout.readline().strip())
CALLS = [
    ("turns", {"session": "demo"}),
    ("turns", {"session": "demo", "limit": 1}),
    ("turns", {"session": "other"}),
    ("turns", {}),
    ("blame", {"path": "bl.txt"}),
    ("blame", {"path": "bl.txt", "start_line": 2, "lines": 2}),
    ("blame", {"path": "bin.dat"}),
    ("blame", {"path": "nope"}),
    ("blame", {"path": "bl.txt", "seq": 3}),
    ("diff_since", {"session": "demo", "before": 1}),
    ("diff_since", {"session": "demo", "after": 1, "path": "bl.txt"}),
    ("diff_since", {"session": "demo", "before": 2, "diff": True}),
    ("diff_since", {"pin": "p1"}),
    ("diff_since", {"seq": 3, "limit": 2}),
    ("diff_since", {"session": "demo", "after": 4}),
    ("diff_since", {"at": "2020-01-01T00:00:00Z"}),
    ("file_history", {"path": "bl.txt"}),
    ("turn_changes", {"session": "demo", "turn": 2}),
]
for name, arguments in CALLS:
    client.stdin.write(json.dumps({"call": name, "arguments": arguments}) + "\n")
    client.stdin.flush()
    print("MCP", name, json.dumps(arguments))
    print(client.stdout.readline().strip())
client.stdin.close()
client.wait()
