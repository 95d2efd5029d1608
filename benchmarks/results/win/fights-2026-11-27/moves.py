"""The phase-2 step at which the curriculum's start first reached each demo step (from a log)."""
import re, sys
seen = {}
for line in open(sys.argv[1], errors="replace").read().replace("\r", "\n").splitlines():
    m = re.search(r"\s(\d+)/\d+ steps.*start (\d+)/(\d+)", line)
    if m and m.group(2) not in seen:
        seen[m.group(2)] = int(m.group(1))
print("phase2_env_steps start_step")
for start, steps in seen.items():
    print(steps, start)
