# Answers the hello, then at the first batch starts a sleeper that inherits
# (and holds) its stdout, writes the sleeper's pid to the file named by
# argv[1], and exits 1 without answering: ratelab must notice the exit (not
# wait for stdout to close) and kill the sleeper with the child's group.
import subprocess, sys
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
sys.stdin.readline()
p = subprocess.Popen(["/bin/sleep", "300"])
open(sys.argv[1], "w").write(str(p.pid))
print("fatal: lost the database", file=sys.stderr, flush=True)
sys.exit(1)
