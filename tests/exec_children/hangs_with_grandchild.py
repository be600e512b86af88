# Answers the hello, then at the first batch starts a sleeper (a grandchild
# of ratelab, in the child's process group), writes "<own pid> <sleeper
# pid>" to the file named by argv[1] and hangs without answering: the run
# waits on it until a signal stops ratelab, which must kill the whole group.
import os, subprocess, sys, time
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
sys.stdin.readline()
p = subprocess.Popen(["/bin/sleep", "300"])
tmp = sys.argv[1] + ".tmp"
open(tmp, "w").write(f"{os.getpid()} {p.pid}")
os.rename(tmp, sys.argv[1])
time.sleep(300)
