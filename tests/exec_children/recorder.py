# Admits everything and records what it is sent: the hello and every line
# (`keys` and `batch`), in the file named by argv[1]. With argv[2] == "2",
# it speaks version 2 and asks for the key strings.
import sys
out = open(sys.argv[1], "w")
v2 = len(sys.argv) > 2 and sys.argv[2] == "2"
out.write(sys.stdin.readline())
print("ratelab-exec 2 ok keys=strings" if v2 else "ratelab-exec 1 ok", flush=True)
for line in sys.stdin:
    out.write(line)
    p = line.split()
    if p[0] == "end":
        break
    if p[0] == "keys":
        continue
    print(" ".join(["1"] * int(p[2])), flush=True)
out.close()
