# A correct child that writes a line after `end`.
import sys
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
for line in sys.stdin:
    p = line.split()
    if p[0] == "end":
        print("1", flush=True)
        break
    print(" ".join(["1"] * int(p[2])), flush=True)
