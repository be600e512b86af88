# Fails at the hello with a useful error followed by a banner of rules and
# blank lines: ratelab quotes the meaningful lines, not the banner.
import sys
sys.stdin.readline()
print("loading config ours.toml", file=sys.stderr)
print("error: rate_per_s is missing", file=sys.stderr)
print("==========", file=sys.stderr)
print("", file=sys.stderr)
print("----------", file=sys.stderr, flush=True)
sys.exit(2)
