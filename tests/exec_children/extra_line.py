# Answers every batch correctly, then writes one line too many: a second
# copy of the answer. ratelab must refuse it, whether it arrives before the
# next batch or after the last one.
import sys
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
for line in sys.stdin:
    p = line.split()
    if p[0] == "end":
        break
    answer = " ".join(["1"] * int(p[2]))
    print(answer)
    print(answer, flush=True)
