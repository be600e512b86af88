# A correct child that, at `end`, starts a background process (its stdout
# not ours) and exits 0 at once, leaving the pid in the file named by
# argv[1]: ratelab must kill it with the child's process group.
import subprocess, sys
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
for line in sys.stdin:
    p = line.split()
    if p[0] == "end":
        bg = subprocess.Popen(["/bin/sleep", "300"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        open(sys.argv[1], "w").write(str(bg.pid))
        break
    print(" ".join(["1"] * int(p[2])), flush=True)
