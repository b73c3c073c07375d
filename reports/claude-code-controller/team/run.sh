#!/bin/sh
# Makes reports/claude-code-controller/team/: the three-writer race of an agent team and
# claude-code-controller (docs/race.md, "A team and another product"): the lead and the
# in-process teammate w1 of one Claude Code CLI with agent teams on, and one
# claude-code-controller session, every workload, each target on its own tasks, every lost
# change charged to the writer whose write dropped it. The load before and after goes to
# load-VERSION.txt, the terminal summary to team-race-….txt.
#
#   reports/claude-code-controller/team/run.sh [CLAUDE_CODE_VERSION] [CONTROLLER_VERSION]
#
# TASKPROOF (default: taskproof on PATH) is the binary.
set -u
cd "$(dirname "$0")/../../.."
TP=${TASKPROOF:-taskproof}
cc=${1:-2.1.332}
ctl=${2:-0.3.0}
out=reports/claude-code-controller/team
name="team-race-$cc-teams-env-controller-$ctl"
load="$out/load-$cc.txt"
echo "before: $(cat /proc/loadavg)" > "$load"
start=$(date +%s)
"$TP" race --target "claude-code@$cc:teams-env" --target "claude-code-controller@$ctl" \
  --writers 1 --teammates 1 --ops 20 --think 0.05 --seed 1 --workload all --timeout 60 \
  --report "json:$out/$name.json" --report "md:$out/$name.md" > "$out/$name.txt" 2>&1
echo "(exit status $?)" >> "$out/$name.txt"
echo "after: $(cat /proc/loadavg); $(($(date +%s) - start)) s" >> "$load"
